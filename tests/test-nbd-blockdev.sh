#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-blockdev.sh - clio serve of a block device (a loop device on
# an 8 MiB image, detached on exit), on a Unix socket: a trim, which the
# server offers, succeeds (it failed with EINVAL: the device refused
# every discard of a block device), and the range reads back as the
# device holds it; a zero with and without NO_HOLE reads as zeros through
# the server and on the device once the server stopped; the bytes
# around them are kept.  Skipped (77) without root or a free loop device.
. "$(dirname "$0")/functions.sh"
[ "$(id -u)" -eq 0 ] || { echo "needs root (losetup)"; exit 77; }
command -v losetup >/dev/null 2>&1 || { echo "losetup not found (apt-get install mount)"; exit 77; }
. "$(dirname "$0")/nbd-common.sh"
nbd_with_clio
nbdops="$(dirname "$CLIO")/tests/tools/nbdops"
[ -x "$nbdops" ] || fail "nbdops not built (make tests)"
head -c 8388608 /dev/urandom >"$tmp/img"
cp "$tmp/img" "$tmp/want"
dev=$(losetup -f --show "$tmp/img" 2>"$tmp/loerr") || { echo "no loop device: $(cat "$tmp/loerr")"; exit 77; }
trap 'nbd_stop; losetup -d "$dev"; rm -rf "$tmp"' EXIT

nbd_start "$plugin" "$dev" bsize=4k
nbdinfo --json "$uri" | python3 -c '
import json, sys
e = json.load(sys.stdin)["exports"][0]
assert e["can_trim"] is True and e["can_zero"] is True, e' || fail "a block device: nbdinfo: no trim or zero"
"$nbdops" "$uri" w:0:1048576:90 f t:0:1048576 f >"$tmp/ops" 2>&1 ||
	fail "a trim of a block device: $(cat "$tmp/ops")"
"$nbdops" "$uri" z:1048576:1048576 z:2097152:1048576:nohole z:3145728:1000 f \
	r:1048576:2097152:0 r:3145728:1000:0 >"$tmp/ops" 2>&1 ||
	fail "a zero of a block device: $(cat "$tmp/ops")"
nbdcopy "$uri" "$tmp/served" 2>"$tmp/err" || fail "nbdcopy out: $(cat "$tmp/err")"
nbd_stop
cmp "$tmp/served" "$dev" || fail "the server's bytes and the device's differ after trim and zero"
head -c 2098152 /dev/zero | cmp -s -i 0:1048576 -n 2098152 - "$dev" ||
	fail "the zeroed range is not zeros on the device"
cmp -s -i 3146728 -n 5241880 "$dev" "$tmp/want" || fail "the bytes after the zeroed range changed"
echo "ok: a block device served: trim ok, zero (also NO_HOLE) reads as zeros, through the server and on the device"
exit 0
