#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-mount.sh - the disk tier under clio mount (-o disk_cache=DIR,
# a directory passed through): a file read through one mount is read
# through the next mount (a restart: new process, new memory cache) from
# DIR, with no read of the file's device, as .clio-stats (clio stat
# --raw) says; the bytes are the file's; a change of the file between
# the mounts is seen; clio dd of the file reads the mount's entries;
# writeback: what a program wrote and fsynced through a mount killed -9
# reaches the file at its next open for writing, and a restarted mount
# reads a new file it crashed with (its size too) at its first open;
# the dirty blocks of a file replaced (another inode at its path) after
# the crash go to lost+found at the next mount's start, with a message.
set -e
. "$(dirname "$0")/mount-common.sh"
mnt=$tmp/mnt dir=$tmp/dir dc=$tmp/dc
mkdir "$mnt" "$dir" "$dc"
head -c 4194304 /dev/urandom >"$dir/f"

# KEY of the open device f in a snapshot
val() { sed -n "s/^f $1: //p" "$2"; }

read_through() {
	mount_start "$dir" "$mnt" -o disk_cache="$dc",kernel_cache=off
	exec 3<"$mnt/f"
	cat <&3 >"$tmp/out"
	"$CLIO" stat --raw "$mnt" >"$tmp/s"
	exec 3<&-
	mount_stop "$mnt"
	cmp "$dir/f" "$tmp/out" || fail "the bytes read through the mount differ"
}

read_through
[ "$(val back_read_bytes "$tmp/s")" = 4194304 ] || { cat "$tmp/s"; fail "first mount: not one read of the file"; }
read_through
[ "$(val back_reads "$tmp/s")" = 0 ] || { cat "$tmp/s"; fail "second mount: $(val back_reads "$tmp/s") reads of the file"; }
[ "$(val disk_cache.bytes_from_cache "$tmp/s")" = 4194304 ] || { cat "$tmp/s"; fail "second mount: not all from DIR"; }
echo "ok: a second mount reads the file from DIR, none from the file"

# the mount's device is the file's too (its path, /proc/self/fd/N, is
# taken resolved): clio dd reads it from DIR
"$CLIO" dd if="$dir/f" of="$tmp/out2" bs=64k --disk-cache="$dc" --json >"$tmp/j" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd after the mount"; }
cmp "$dir/f" "$tmp/out2" || fail "clio dd after the mount: the bytes differ"
reads=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0]["reads"])' "$tmp/j")
[ "$reads" = 0 ] || fail "clio dd read the file $reads times: the mount's entries were another object"
echo "ok: clio dd reads what the mount kept in DIR"

printf 'changed' | dd of="$dir/f" bs=1 seek=100000 conv=notrunc 2>/dev/null
read_through
[ "$(val disk_cache.stale_drops "$tmp/s")" -gt 0 ] || { cat "$tmp/s"; fail "the change was not seen"; }
echo "ok: a change between the mounts is seen"

# writeback: a program writes through the mount and fsyncs, the mount is
# killed (-9); the kernel's writeback cache had the mount set the file's
# mtime, which the tier takes as the mount's own change: the next open of
# the file for writing (clio dd) writes the dirty blocks back
head -c 1048576 /dev/urandom >"$tmp/new"
mount_start "$dir" "$mnt" -o disk_cache="$dc",disk_cache_mode=writeback,dirty_age=600
python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, open(sys.argv[2], "rb").read(), 1048576)
os.fsync(fd)
os.close(fd)' "$mnt/f" "$tmp/new"
kill -9 "$mount_pid"
wait "$mount_pid" 2>/dev/null || true
mount_pid=
fusermount3 -uz "$mnt"
cmp -s -n 1048576 -i 0:1048576 "$tmp/new" "$dir/f" && echo "(the dirty blocks were written back before the kill)"
"$CLIO" dd if=/dev/null of="$dir/f" conv=notrunc --disk-cache="$dc" \
	--disk-cache-mode=writeback >/dev/null 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd opening the file after the crash"; }
grep -q "were not written back" "$tmp/err" && { cat "$tmp/err"; fail "the mount's fsynced blocks went to lost+found"; }
cmp -n 1048576 -i 0:1048576 "$tmp/new" "$dir/f" || fail "the fsynced write did not reach the file"
echo "ok: writeback: what a program fsynced through a mount killed -9 reaches the file"

# writeback: a new file of an odd size written and fsynced through a
# mount killed -9 (the file is empty in the directory, its blocks dirty
# in DIR); the next mount's first open writes them back, and that open
# reads them: the size the kernel had from the lookup (0) is dropped
head -c 100123 /dev/urandom >"$tmp/odd"
mount_start "$dir" "$mnt" -o disk_cache="$dc",disk_cache_mode=writeback,dirty_age=600
python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, open(sys.argv[2], "rb").read())
os.fsync(fd)' "$mnt/odd" "$tmp/odd"
kill -9 "$mount_pid"
wait "$mount_pid" 2>/dev/null || true
mount_pid=
fusermount3 -uz "$mnt"
[ "$(stat -c %s "$dir/odd")" = 0 ] || echo "(the dirty blocks were written back before the kill)"
mount_start "$dir" "$mnt" -o disk_cache="$dc",disk_cache_mode=writeback
stat -c %s "$mnt/odd" >/dev/null
cmp "$mnt/odd" "$tmp/odd" || fail "after the crash, the mount's first read of the file differs"
[ "$(stat -c %s "$mnt/odd")" = 100123 ] || fail "after the crash, stat says $(stat -c %s "$mnt/odd") bytes"
mount_stop "$mnt"
cmp "$dir/odd" "$tmp/odd" || fail "after the crash, the file differs"
echo "ok: writeback: a restarted mount reads a file it crashed with at its first open"

# writeback: a file written and fsynced through a mount killed -9, then
# replaced (another inode at its path, as an editor or rsync does)
# before the next mount: its dirty blocks are another file's; the next
# mount's start keeps them in lost+found, with a message, and leaves
# the new file as it is
head -c 1048576 /dev/urandom >"$dir/r"
mount_start "$dir" "$mnt" -o disk_cache="$dc",disk_cache_mode=writeback,dirty_age=600
python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, open(sys.argv[2], "rb").read(), 0)
os.fsync(fd)
os.close(fd)' "$mnt/r" "$tmp/new"
kill -9 "$mount_pid"
wait "$mount_pid" 2>/dev/null || true
mount_pid=
fusermount3 -uz "$mnt"
cmp -s "$tmp/new" "$dir/r" && echo "(the dirty blocks were written back before the kill)"
cp "$dir/r" "$dir/r.new"
mv "$dir/r.new" "$dir/r"
cp "$dir/r" "$tmp/r.replaced"
rm -rf "$dc/lost+found"
mount_start "$dir" "$mnt" -o disk_cache="$dc",disk_cache_mode=writeback
cmp "$mnt/r" "$tmp/r.replaced" || fail "the replacing file reads otherwise through the mount"
mount_stop "$mnt" 2>"$tmp/err"
cmp "$dir/r" "$tmp/r.replaced" || fail "the replacing file was written"
if ! cmp -s "$tmp/new" "$tmp/r.replaced"; then
	grep -q "were not written back.*kept in $dc/lost+found" "$tmp/err" ||
		{ cat "$tmp/err"; fail "no message says where the replaced file's dirty blocks are"; }
	python3 - "$dc/lost+found" "$tmp/new" <<'PY' || fail "lost+found does not hold the replaced file's dirty blocks"
import os, sys
top, new = sys.argv[1], open(sys.argv[2], 'rb').read()
n = 0
for sub in os.listdir(top):
    for name in os.listdir(os.path.join(top, sub)):
        if name != 'README':
            b = open(os.path.join(top, sub, name), 'rb').read()
            assert new[int(name):int(name) + len(b)] == b, name
            n += 1
assert n > 0
PY
fi
echo "ok: writeback: the dirty blocks of a file replaced after a crash go to lost+found"
