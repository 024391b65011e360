#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-durability.sh - clio mount of a directory: data written and
# fsync'd survives kill -9 of the daemon; data written without fsync is
# in the source directory after a clean clio umount; SIGTERM writes back
# too; kill -9 in the middle of a 1 KiB rewrite (the read-ahead helper at
# work on the mount) ends the daemon and its helper at once, and SIGTERM
# there unmounts cleanly.
set -e
. "$(dirname "$0")/mount-common.sh"
src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt"
head -c 5000000 /dev/urandom >"$tmp/a"
head -c 3000000 /dev/urandom >"$tmp/b"

# 1. fsync'd data survives kill -9 (the cache is bigger than the data,
#    and dirty_age long: without fsync nothing would be written yet)
mount_start "$src" "$mnt" -o cache_size=64M,dirty_age=600
if command -v python3 >/dev/null 2>&1; then
	# the daemon dies before close(2), so only the fsync can save it
	python3 - "$tmp/a" "$mnt/a" "$mount_pid" <<'PY'
import os, sys
data = open(sys.argv[1], "rb").read()
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT, 0o644)
assert os.write(fd, data) == len(data)
os.fsync(fd)
os.kill(int(sys.argv[3]), 9)
try:
    os.close(fd)
except OSError:
    pass
PY
else
	dd if="$tmp/a" of="$mnt/a" bs=64k conv=fsync 2>/dev/null
fi
kill -9 "$mount_pid" 2>/dev/null || true
wait "$mount_pid" 2>/dev/null || true
mount_pid=
fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt"
mountpoint -q "$mnt" && fail "dead mount still there"
cmp "$tmp/a" "$src/a" || fail "fsync'd data lost after kill -9"

# 2. no fsync: a clean unmount writes everything back
mount_start "$src" "$mnt" -o cache_size=64M,dirty_age=600
dd if="$tmp/b" of="$mnt/b" bs=4k 2>/dev/null
dd if="$tmp/b" of="$mnt/a" bs=1k seek=100 conv=notrunc 2>/dev/null
mount_stop "$mnt"
cmp "$tmp/b" "$src/b" || fail "unsynced data lost at unmount"
cmp -n 3000000 "$tmp/b" "$src/a" 0 102400 || fail "rewrite lost at unmount"
cmp -n 102400 "$tmp/a" "$src/a" || fail "rewrite changed what it did not cover"

# 3. SIGTERM unmounts and writes back too
mount_start "$src" "$mnt" -o cache_size=64M,dirty_age=600
dd if="$tmp/a" of="$mnt/c" bs=64k 2>/dev/null
kill -TERM "$mount_pid"
wait "$mount_pid" || fail "SIGTERM: exit $?"
mount_pid=
mountpoint -q "$mnt" && fail "still mounted after SIGTERM"
cmp "$tmp/a" "$src/c" || fail "data lost at SIGTERM"

# 4. kill -9 or SIGTERM in the middle of a rewrite: no process of the
#    daemon may stay behind waiting on its own mount
head -c 64M /dev/zero >"$src/big"
for sig in KILL TERM; do
	mount_start "$src" "$mnt" -o cache_size=96M
	if [ "$(id -u)" -eq 0 ]; then
		sync
		echo 3 >/proc/sys/vm/drop_caches
	fi
	dd if=/dev/zero of="$mnt/big" bs=1k count=64k conv=notrunc 2>/dev/null &
	dd_pid=$!
	sleep 0.3
	kill -$sig "$mount_pid"
	i=0
	while pgrep -f "clio mount -f .* $mnt\$" >/dev/null; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "kill -$sig mid-rewrite: the daemon or its helper stays"
		sleep 0.1
	done
	wait "$mount_pid" 2>/dev/null || true
	mount_pid=
	wait "$dd_pid" 2>/dev/null || true
	if [ $sig = KILL ]; then
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt"
	fi
	mountpoint -q "$mnt" && fail "kill -$sig mid-rewrite: still mounted"
done
exit 0
