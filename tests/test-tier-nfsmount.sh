#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-nfsmount.sh - the disk tier in writeback mode under
# `clio mount nfs://` (NFS-Ganesha in the test's namespaces): a new file
# of an odd size written and fsynced through a mount killed with -9 is
# empty on the export, its blocks dirty in DIR; the next mount writes
# them back before it serves anything, so its first stat and read show
# the file whole, and the export has it.  A file written and fsynced
# through a mount killed -9, then replaced on the export (another fileid
# at its path): the next mount's start keeps its dirty blocks in
# lost+found, with a message, and leaves the new file as it is.
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

head -c 262144 /dev/urandom >"$tmp/r"
head -c 262144 /dev/urandom >"$tmp/new"
cp "$tmp/r" "$export/r"
nfs_mount "$m" "$url" -o disk_cache="$dc",disk_cache_mode=writeback,dirty_age=600
python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, open(sys.argv[2], "rb").read(), 0)
os.fsync(fd)' "$m/r" "$tmp/new" || fail "writing r through the mount"
kill -9 "$last_pid"
wait "$last_pid" 2>/dev/null
fusermount3 -uz "$m"
if cmp -s "$export/r" "$tmp/new"; then
	echo "(the dirty blocks were written back before the kill)"
else
	cp "$export/r" "$export/r.new"
	mv "$export/r.new" "$export/r"
	rm -rf "$dc/lost+found"
	nfs_mount "$m" "$url" -o disk_cache="$dc",disk_cache_mode=writeback
	cmp "$m/r" "$tmp/r" || fail "the replacing file reads otherwise through the mount"
	nfs_umount "$m"
	cmp "$export/r" "$tmp/r" || fail "the replacing file was written"
	grep -q "were not written back.*kept in $dc/lost+found" "$m.err" ||
		{ cat "$m.err"; fail "no message says where the replaced file's dirty blocks are"; }
	cat "$dc"/lost+found/*/0 | cmp -n 16384 - "$tmp/new" ||
		fail "lost+found does not hold the replaced file's first dirty block"
	echo "ok: writeback: the dirty blocks of a file replaced on the export after a crash go to lost+found"
fi
