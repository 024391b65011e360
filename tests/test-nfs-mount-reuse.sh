#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-mount-reuse.sh - `clio mount nfs://` when NFS-Ganesha gives a
# new file the fileid of a removed one: the export is a small ext4,
# loop-mounted in the test's namespace, which hands a freed inode number
# to the next file at once.  A file read through the mount (its device
# kept idle, with the file's handle), removed through another mount, and
# another file made on the server under the same inode number:
#  1. the new file, under a new name, reads back through the mount (it
#     failed with ESTALE: the node found by the fileid opened the old
#     file's stale handle), and again at a second open;
#  2. the old name is gone (ENOENT, not ESTALE), also when the old file
#     was only looked up (it opened the new file: the node's path was
#     the new name's);
#  3. a file removed and another renamed over its name, under the same
#     inode number (the kernel's entry for the name still cached), reads
#     as the new file;
#  4. a file open through the mount is found again after the same.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"
. "$(dirname "$0")/nfs-mount-common.sh"

command -v mkfs.ext4 >/dev/null 2>&1 || { echo "skip: mkfs.ext4 is missing"; exit 77; }
truncate -s 32M "$tmp/img"
mkfs.ext4 -q -F "$tmp/img" >/dev/null 2>&1 || { echo "skip: cannot make an ext4 image"; exit 77; }
mount -o loop "$tmp/img" "$export" 2>/dev/null || { echo "skip: cannot mount a loop device"; exit 77; }
# the image is unmounted once the server is stopped, before $tmp goes
ganesha_all_stop() {
	proxy_stop
	ganesha_stop
	pid_stop "$rpcbind_pid"
	rpcbind_pid=""
	umount "$export" 2>/dev/null
}

ganesha_start
url="nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port"
m=$tmp/m
o=$tmp/o
nfs_mount "$m" "$url" -o bsize=16k,cache_size=4M
nfs_mount "$o" "$url" -o bsize=16k,cache_size=4M

# same_ino A B: B was given A's inode number (else the test says so and
# skips: this ext4 did not reuse it)
same_ino() {
	[ "$1" = "$2" ] ||
		{ echo "skip: the new file got inode $2, not the removed one's $1"; exit 77; }
}

# 1, 2
echo old >"$export/a"
ia=$(stat -c %i "$export/a")
[ "$(cat "$m/a")" = old ] || fail "a does not read back"
rm "$o/a" || fail "rm a through the other mount"
echo new >"$export/b"
same_ino "$ia" "$(stat -c %i "$export/b")"
r=$(cat "$m/b" 2>&1)
[ "$r" = new ] || fail "b, under the removed a's fileid $ia: '$r', not 'new'"
r=$(cat "$m/b" 2>&1)
[ "$r" = new ] || fail "b at its second open: '$r'"
echo "ok: a new file under a removed file's fileid reads back"
if r=$(cat "$m/a" 2>&1); then fail "a, removed, still reads: '$r'"; fi
case $r in
*"No such file"*) ;;
*) fail "a, removed: '$r', not ENOENT";;
esac
echo "ok: the removed file's name is gone (ENOENT)"

# 2b: the old file only looked up (no device): its name, its entry still
# in the kernel's cache, does not open the new file (it read the new
# file's data: the node's path was the new name's)
echo old >"$export/a2"
ia=$(stat -c %i "$export/a2")
stat "$m/a2" >/dev/null || fail "stat a2"
rm "$o/a2" || fail "rm a2 through the other mount"
echo new >"$export/b2"
same_ino "$ia" "$(stat -c %i "$export/b2")"
stat "$m/b2" >/dev/null || fail "stat b2"
if r=$(cat "$m/a2" 2>&1); then fail "a2, removed, reads '$r' (b2's data)"; fi
r=$(cat "$m/b2" 2>&1)
[ "$r" = new ] || fail "b2: '$r', not 'new'"
echo "ok: a removed name only looked up does not open the new file under its fileid"

# 3: rename over the name, the same inode number
echo one >"$export/c"
ic=$(stat -c %i "$export/c")
[ "$(cat "$m/c")" = one ] || fail "c does not read back"
rm "$o/c" || fail "rm c through the other mount"
echo two >"$export/c.tmp"
mv "$export/c.tmp" "$export/c"
same_ino "$ic" "$(stat -c %i "$export/c")"
r=$(cat "$m/c" 2>&1)
[ "$r" = two ] || fail "c, replaced under the same fileid: '$r', not 'two'"
echo "ok: a name replaced by a file under the old one's fileid reads the new file"

# 4: the old file open through the mount meanwhile
echo three >"$export/d"
id=$(stat -c %i "$export/d")
exec 7<"$m/d"
rm "$o/d" || fail "rm d through the other mount"
echo four >"$export/e"
same_ino "$id" "$(stat -c %i "$export/e")"
r=$(cat "$m/e" 2>&1)
[ "$r" = four ] || fail "e, under the fileid of d open through the mount: '$r'"
exec 7<&-
r=$(cat "$m/e" 2>&1)
[ "$r" = four ] || fail "e after d's close: '$r'"
echo "ok: a new file under the fileid of one open through the mount reads back"

nfs_umount "$m"
nfs_umount "$o"
exit 0
