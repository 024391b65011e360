#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-rbd-frontends.sh - an RBD image of a one-node Ceph cluster
# (tests/ceph-common.sh) through clio's front ends: clio serve exports it
# over NBD on a Unix socket (nbdcopy writes and reads it back, qemu-io
# trims and zeroes through it, and `rbd export` has the bytes), clio mount shows it as one file (cmp of what
# was served, a write through the file lands in the image).  Each part is
# skipped, with a message, where its tools are missing (nbdkit and
# libnbd-bin; FUSE); the server and the mount are stopped by pid on exit.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ceph-common.sh"

ceph_start 16M
u=$(ceph_uri)
head -c 4194304 /dev/urandom >"$tmp/pat"
cp "$tmp/pat" "$tmp/want" # what the image holds after the served part
serve_pid=""
mnt="$tmp/mnt"
mount_pid=""
ceph_on_exit='
	[ -n "$serve_pid" ] && ceph_kill "$serve_pid"
	grep -qF " $mnt fuse" /proc/mounts && { fusermount3 -u "$mnt" || fusermount3 -uz "$mnt"; }
	[ -n "$mount_pid" ] && ceph_kill "$mount_pid"'

# ------------------------------------------------------------ clio serve
if command -v nbdkit >/dev/null 2>&1 && command -v nbdcopy >/dev/null 2>&1; then
	# nbdkit is no sanitized program: under ASan the plugin needs the
	# runtime loaded first
	serve_env=""
	if [ "${CLIO_FLAVOUR:-plain}" = asan ]; then
		serve_env="LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so) ASAN_OPTIONS=detect_leaks=0"
	fi
	sock="$tmp/sock"
	env $serve_env "$CLIO" serve "$u" --socket "$sock" --pidfile "$tmp/serve.pid" \
		2>"$tmp/err" || { cat "$tmp/err"; fail "clio serve $u"; }
	ceph_wait 10 "clio serve's pid file" test -s "$tmp/serve.pid"
	serve_pid=$(cat "$tmp/serve.pid")
	nbdcopy "$tmp/pat" "nbd+unix:///?socket=$sock" || fail "nbdcopy into clio serve"
	nbdcopy "nbd+unix:///?socket=$sock" "$tmp/served" || fail "nbdcopy out of clio serve"
	head -c 4194304 "$tmp/served" | cmp - "$tmp/pat" || fail "clio serve: the bytes read back differ"
	# trim and zero go down to librbd (rbd_discard, rbd_write_zeroes)
	if command -v qemu-io >/dev/null 2>&1; then
		nbdinfo --json "nbd+unix:///?socket=$sock" | python3 -c '
import json, sys
e = json.load(sys.stdin)["exports"][0]
assert e["can_trim"] is True and e["can_zero"] is True, e' || fail "clio serve of rbd: no trim"
		qemu-io -f raw "nbd+unix:///?socket=$sock" -c 'discard 1M 1M' -c 'write -z 3M 512K' \
			-c 'read -P 0 3M 512K' -c flush >"$tmp/qemu.out" 2>&1 &&
			! grep -q -i 'fail\|error\|mismatch' "$tmp/qemu.out" ||
			{ cat "$tmp/qemu.out"; fail "qemu-io: trim and zero of rbd"; }
		python3 - "$tmp/want" <<'PY'
import sys
M = 1 << 20
b = bytearray(open(sys.argv[1], "rb").read())
b[M:2 * M] = bytes(M)
b[3 * M:3 * M + M // 2] = bytes(M // 2)
open(sys.argv[1], "wb").write(b)
PY
	fi
	ceph_kill "$serve_pid"
	serve_pid=""
	rbd export rbd/img "$tmp/export" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "rbd export"; }
	head -c 4194304 "$tmp/export" | cmp - "$tmp/want" ||
		fail "clio serve: the image lacks what nbdcopy wrote, trimmed and zeroed"
	echo "ok: clio serve of $u: 4 MiB through NBD, 1 MiB trimmed and 512 KiB zeroed, in the image after the server stopped"
else
	echo "skip: clio serve (nbdkit or nbdcopy missing: apt-get install nbdkit libnbd-bin)"
	"$CLIO" dd if="$tmp/pat" of="$u" bs=1M conv=notrunc,fsync status=none || fail "clio dd"
fi

# ------------------------------------------------------------ clio mount
if [ "${CLIO_FLAVOUR:-plain}" != tsan ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null 2>&1; then
	mkdir "$mnt"
	"$CLIO" mount -f "$u" "$mnt" 2>"$tmp/mount.err" &
	mount_pid=$!
	ceph_wait 20 "clio mount of $u" mountpoint -q "$mnt"
	head -c 4194304 "$mnt/disk" | cmp - "$tmp/want" || fail "clio mount: the file differs from the image"
	head -c 100000 /dev/urandom >"$tmp/q"
	dd if="$tmp/q" of="$mnt/disk" bs=1000 seek=3 conv=notrunc,fsync status=none ||
		fail "dd into the mounted file"
	"$CLIO" umount "$mnt" || fail "clio umount $mnt"
	wait "$mount_pid" || { cat "$tmp/mount.err"; fail "clio mount exited $?"; }
	mount_pid=""
	rm -f "$tmp/export"
	rbd export rbd/img "$tmp/export" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "rbd export"; }
	dd if="$tmp/export" bs=1000 skip=3 count=100 status=none | cmp - "$tmp/q" ||
		fail "clio mount: the write through the file is not in the image"
	echo "ok: clio mount of $u: the image as one file, a write through it in the image"
else
	echo "skip: clio mount (no FUSE here, or under tsan)"
fi
