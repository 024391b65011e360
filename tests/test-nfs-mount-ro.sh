#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-mount-ro.sh - `clio mount nfs://` (without -o ro) of exports
# that refuse this mount's writes, NFS-Ganesha in the test's namespace:
#  1. a read-only export: its files read back equal through the mount;
#     opening one for writing, truncating it and creating a file fail
#     (EACCES, EROFS; truncate(2) by name too, the server's error), the
#     export's file keeps its bytes, and reading
#     still works after the refused writer;
#  2. an export that squashes root (the mount's identity for opening a
#     file's data): a file owned by another user, mode 0644, reads back
#     equal and refuses a writer; another is read, made 0666 on the
#     server, then written through the mount (its read-only device made
#     writable again once no one reads it), and the export holds what
#     was written.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"
. "$(dirname "$0")/nfs-mount-common.sh"

ro=$tmp/ro sq=$tmp/sq
mkdir -p "$ro" "$sq"
chmod 777 "$sq"
ganesha_export 2 "$ro" /ro RO No_Root_Squash
ganesha_export 3 "$sq" /sq RW Root_Squash
ganesha_start
q="port=$nfs_port&mountport=$mnt_port"

# ------------------------------------------------------------ read-only
head -c 300001 /dev/urandom >"$ro/f"
cp "$ro/f" "$tmp/f"
mnt=$tmp/m1
nfs_mount "$mnt" "nfs://127.0.0.1$ro?$q"
cmp "$mnt/f" "$tmp/f" || fail "read-only export: the file reads back otherwise"
# truncate(2) by name, the file's read-only device idle: the server's word
e=$(perl -e 'truncate($ARGV[0], 5) ? print "ok" : print "$!"' "$mnt/f")
[ "$e" = "Read-only file system" ] || [ "$e" = "Permission denied" ] ||
	fail "read-only export: truncate(2) gives '$e'"
if (echo x >>"$mnt/f") 2>/dev/null; then fail "read-only export: a write was accepted"; fi
if truncate -s 5 "$mnt/f" 2>/dev/null; then fail "read-only export: truncate succeeded"; fi
if (echo x >"$mnt/new") 2>/dev/null; then fail "read-only export: a file was created"; fi
cmp "$mnt/f" "$tmp/f" || fail "read-only export: after the refused writes, the file reads otherwise"
cmp "$ro/f" "$tmp/f" || fail "read-only export: the export's file changed"
[ ! -e "$ro/new" ] || fail "read-only export: new is on the export"
nfs_umount "$mnt"
echo "ok: read-only export: read through the mount, writes refused"

# ------------------------------------------------------------ root squashed
head -c 200003 /dev/urandom >"$sq/mine"
chown 1000:1000 "$sq/mine"
chmod 644 "$sq/mine"
head -c 150001 /dev/urandom >"$sq/shared"
chown 1000:1000 "$sq/shared"
chmod 644 "$sq/shared"
cp "$sq/mine" "$tmp/mine"
cp "$sq/shared" "$tmp/shared"
mnt=$tmp/m2
nfs_mount "$mnt" "nfs://127.0.0.1$sq?$q"
cmp "$mnt/mine" "$tmp/mine" || fail "root squashed: a 0644 file of another user reads back otherwise"
if (echo x >>"$mnt/mine") 2>/dev/null; then fail "root squashed: a write to a 0644 file was accepted"; fi
cmp "$mnt/shared" "$sq/shared" || fail "root squashed: a 0644 file reads back otherwise"
chmod 666 "$sq/shared"
head -c 70000 /dev/urandom >"$tmp/piece"
dd if="$tmp/piece" of="$mnt/shared" bs=7000 seek=3 conv=notrunc status=none ||
	fail "root squashed: writing a 0666 file through the mount"
dd if="$tmp/piece" of="$tmp/shared" bs=7000 seek=3 conv=notrunc status=none
nfs_umount "$mnt"
cmp "$sq/shared" "$tmp/shared" || fail "root squashed: the export's 0666 file differs from what was written"
cmp "$sq/mine" "$tmp/mine" || fail "root squashed: the 0644 file changed"
echo "ok: root squashed: files read through the mount, a writable one written"
