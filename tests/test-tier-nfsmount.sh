#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-nfsmount.sh - the disk tier in writeback mode under
# `clio mount nfs://` (NFS-Ganesha in the test's namespaces): a new file
# of an odd size written and fsynced through a mount killed with -9 is
# empty on the export, its blocks dirty in DIR; the next mount writes
# them back before it serves anything, so its first stat and read show
# the file whole, and the export has it.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"
. "$(dirname "$0")/nfs-mount-common.sh"

ganesha_start
url="nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port"
m=$tmp/m dc=$tmp/dc
mkdir -p "$dc"
head -c 100123 /dev/urandom >"$tmp/odd"
nfs_mount "$m" "$url" -o disk_cache="$dc",disk_cache_mode=writeback,dirty_age=600
python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, open(sys.argv[2], "rb").read())
os.fsync(fd)' "$m/odd" "$tmp/odd" || fail "writing through the mount"
kill -9 "$last_pid"
wait "$last_pid" 2>/dev/null
fusermount3 -uz "$m"
[ "$(stat -c %s "$export/odd")" = 0 ] ||
	echo "(the dirty blocks were written back before the kill)"
nfs_mount "$m" "$url" -o disk_cache="$dc",disk_cache_mode=writeback
[ "$(stat -c %s "$m/odd")" = 100123 ] ||
	fail "after the crash, stat through the mount says $(stat -c %s "$m/odd") bytes"
cmp "$m/odd" "$tmp/odd" || fail "after the crash, the mount's first read of the file differs"
nfs_umount "$m"
cmp "$export/odd" "$tmp/odd" || fail "after the crash, the export's file differs"
echo "ok: writeback: a restarted mount shows a file it crashed with whole from its first stat"
