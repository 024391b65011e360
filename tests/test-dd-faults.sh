#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-dd-faults.sh - I/O errors injected under clio dd reach the user:
# a write error in the output exits 74 (EX_IOERR) with a message, with
# conv=fsync and without it (the write-back at close fails), and the rest
# of the data still lands, and the failed blocks are not tried again for
# every MiB copied after them; but a write-back that fails with ENOSPC
# ends the copy; a read error in the input exits 74 after
# copying what came before it; a failed flush exits 74.
set -e
. "$(dirname "$0")/functions.sh"

head -c 2097152 /dev/urandom >"$tmp/in"
M=1048576
K64=65536

# expect_74 NAME ARGS...: exit 74 and an error message naming the cause
expect_74() {
	name=$1
	shift
	rc=0
	"$CLIO" dd "$@" >"$tmp/stdout" 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 74 ] || fail "$name: exit $rc, want 74: $(cat "$tmp/err")"
	grep -q 'Input/output error' "$tmp/err" ||
		fail "$name: no error message: $(cat "$tmp/err")"
	echo "ok: $name: exit 74: $(grep -m 1 'error' "$tmp/err")"
}

# the bytes [off, off+len) of two files are (not) the same
same_range() {
	tail -c +$(($3 + 1)) "$1" | head -c "$4" >"$tmp/a"
	tail -c +$(($3 + 1)) "$2" | head -c "$4" >"$tmp/b"
	cmp -s "$tmp/a" "$tmp/b"
}

# A write error in [1M, 1M+64K), caught by conv=fsync.  With 64 KiB
# clusters only the cluster holding the bad range fails.
rm -f "$tmp/out"
expect_74 "write fault, conv=fsync" if="$tmp/in" \
	of="fault:write=EIO,offset=1M,length=64K@$tmp/out" bs=64k conv=fsync \
	--maxphys=64k
grep -q "fsync failed for 'fault:write=EIO" "$tmp/err" ||
	fail "the message does not name the device: $(cat "$tmp/err")"
[ "$(wc -c <"$tmp/out")" -eq 2097152 ] || fail "the output is not 2 MiB long"
same_range "$tmp/in" "$tmp/out" 0 $M || fail "the data before the fault is not there"
same_range "$tmp/in" "$tmp/out" $((M + K64)) $((M - K64)) ||
	fail "the data after the fault is not there"
same_range "$tmp/in" "$tmp/out" $M $K64 && fail "the failed range was written"

# ... and without conv=fsync, by the write-back at close
rm -f "$tmp/out"
expect_74 "write fault, no fsync" if="$tmp/in" \
	of="fault:write=EIO,offset=1M,length=64K@$tmp/out" bs=4k
# the summary comes after the error, and the loss is counted
rm -f "$tmp/out"
rc=0
"$CLIO" dd if="$tmp/in" of="fault:write=EIO,offset=1M,length=64K@$tmp/out" \
	bs=4k --maxphys=64k --json >"$tmp/json" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 74 ] || fail "write fault, --json: exit $rc"
grep -q '"lost_bytes": 65536' "$tmp/json" || fail "--json: lost_bytes is not 64K: $(cat "$tmp/json")"
grep -q '"write_errors": [1-9]' "$tmp/json" || fail "--json: no write_errors"
echo "ok: write fault, --json: 64 KiB lost and counted"

# The failed blocks are tried again at the checks of the copy, conv=fsync
# and the close, not once more for every MiB copied after the fault: a
# longer copy past the same bad range counts as many write errors
werrs() {
	rc=0
	"$CLIO" dd if=/dev/zero of="fault:write=EIO,offset=1M,length=64K@mem:size=32M" \
		bs=64k count="$1" conv=fsync --json >"$tmp/json" 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 74 ] || fail "write fault, count=$1: exit $rc"
	sed -n 's/.*"write_errors": \([0-9]*\).*/\1/p' "$tmp/json"
}
w100=$(werrs 100)
w400=$(werrs 400)
[ -n "$w100" ] && [ "$w100" -gt 0 ] || fail "write fault, count=100: no write_errors"
[ "$w100" -eq "$w400" ] ||
	fail "write errors grow with the copy past the fault: $w100 for 6.25 MiB, $w400 for 25 MiB"
echo "ok: write fault: $w100 write errors for 6.25 MiB copied and for 25 MiB"

# A write-back that fails for want of space (a full file system) ends
# the copy, as GNU dd's write does: said once, exit 74, long before the
# 1000 blocks asked; without count= the copy ends too.  A 2 MiB cache:
# the copy is never more than its dirty limit ahead of the write-back
# whose failure stops it, however late that failure comes (with the
# default cache a loaded machine let it run to 689 blocks)
for n in count=1000 count=1000000000; do
	rm -f "$tmp/out"
	rc=0
	timeout 60 "$CLIO" dd if=/dev/zero of="fault:write=ENOSPC,offset=2M,length=1T@$tmp/out" \
		bs=64k $n --cache-size=2M 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 74 ] || fail "ENOSPC at write-back, $n: exit $rc, want 74: $(cat "$tmp/err")"
	grep -q "^clio dd: error writing 'fault:write=ENOSPC.*': No space left on device$" "$tmp/err" ||
		fail "ENOSPC at write-back, $n: no error writing: $(cat "$tmp/err")"
	[ "$(grep -c 'No space left' "$tmp/err")" -eq 1 ] ||
		fail "ENOSPC at write-back, $n: said more than once: $(cat "$tmp/err")"
	blocks=$(sed -n 's/^\([0-9]*\)+0 records in$/\1/p' "$tmp/err")
	[ "$blocks" -lt 200 ] || fail "ENOSPC at write-back, $n: the copy went on to $blocks blocks"
	echo "ok: ENOSPC at write-back, $n: exit 74 after $blocks blocks"
done

# a failed flush
rm -f "$tmp/out"
expect_74 "flush fault" if="$tmp/in" of="fault:flush=EIO@$tmp/out" bs=64k conv=fsync

# the same range on a simulated disk
expect_74 "write fault on sim" if=/dev/zero \
	of="fault:write=EIO,offset=1M,length=64K@sim:preset=ssd,size=16M" bs=1M count=4 conv=fsync

# A read error in the input at 64K: the 16 blocks before it are copied
rm -f "$tmp/out"
expect_74 "read fault" if="fault:read=EIO,offset=64K,length=4K@$tmp/in" \
	of="$tmp/out" bs=4k
grep -q "error reading 'fault:read=EIO" "$tmp/err" ||
	fail "the message does not name the input: $(cat "$tmp/err")"
grep -q '^16+0 records in$' "$tmp/err" || fail "records: $(cat "$tmp/err")"
[ "$(wc -c <"$tmp/out")" -eq $K64 ] || fail "the output is not the 64 KiB before the error"
same_range "$tmp/in" "$tmp/out" 0 $K64 || fail "the data before the error differs"

# ... also through the direct path
rm -f "$tmp/out"
expect_74 "read fault, iflag=direct" if="fault:read=EIO,offset=64K,length=4K@$tmp/in" \
	of="$tmp/out" bs=4k iflag=direct
[ "$(wc -c <"$tmp/out")" -eq $K64 ] || fail "direct: the output is not 64 KiB"

# faults outside what is copied change nothing
rm -f "$tmp/out"
"$CLIO" dd if="fault:read=EIO,offset=1M,length=4K@$tmp/in" \
	of="fault:write=EIO,offset=1M,length=4K@$tmp/out" bs=4k count=128 conv=fsync \
	2>"$tmp/err" || fail "a copy that avoids the faults failed: $(cat "$tmp/err")"
same_range "$tmp/in" "$tmp/out" 0 $((M / 2)) || fail "the copy beside the faults differs"
echo "ok: faults beside the copy"
exit 0
