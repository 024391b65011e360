#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-mount-fds.sh - `clio mount nfs://` out of file descriptors
# (each open or idle file's device holds a socket and an eventfd): the
# daemon runs under a hard limit of 256 (and 257) descriptors, 80 files
# are read through the mount (their devices stay idle), then a program holds 80
# other files open at once: every open succeeds, the idle devices making
# room (an open failed with EMFILE once the idle devices and the open
# ones held every descriptor), and what it writes through each is on
# the export after the close.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"
. "$(dirname "$0")/nfs-mount-common.sh"

command -v python3 >/dev/null 2>&1 || { echo "skip: python3 is missing"; exit 77; }
ganesha_start
url="nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port"
m=$tmp/m
mkdir "$export/d"
i=0
while [ $i -lt 160 ]; do
	echo "f$i" >"$export/d/f$i"
	i=$((i + 1))
done
command -v prlimit >/dev/null 2>&1 || { echo "skip: prlimit is missing"; exit 77; }
# two limits: the last descriptor short for the eventfd, or for a socket
for lim in 256 257; do
	nfs_mount "$m" "$url" -o bsize=16k,cache_size=4M
	prlimit --pid "$last_pid" --nofile=$lim:$lim || fail "prlimit of the daemon"
	i=0
	while [ $i -lt 80 ]; do
		[ "$(cat "$m/d/f$i")" = "f$i" ] || fail "f$i does not read back"
		i=$((i + 1))
	done
	python3 - "$m/d" <<'PY' || fail "$lim descriptors: 80 files open at once through the mount"
import os, sys
fds = []
for i in range(80, 160):
    try:
        fds.append(os.open(os.path.join(sys.argv[1], "f%d" % i), os.O_RDWR))
    except OSError as e:
        sys.exit("open %d of 80 (f%d): %s" % (len(fds) + 1, i, e))
for fd in fds:
    os.pwrite(fd, b"W", 0)
for fd in fds:
    os.close(fd)
PY
	i=80
	while [ $i -lt 160 ]; do
		[ "$(cat "$export/d/f$i")" = "W$i" ] ||
			fail "$lim descriptors: f$i on the export: '$(cat "$export/d/f$i")', not 'W$i'"
		i=$((i + 1))
	done
	nfs_umount "$m"
	echo "ok: $lim descriptors, 80 devices idle: 80 files open at once"
done
exit 0
