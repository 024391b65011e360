#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-clientsize.sh - exports whose size is no multiple of the
# server's minimum block size (nbdkit's blocksize-policy filter over the
# file plugin, on a Unix socket), through clio's NBD client: with a server
# that serves the unaligned tail to a client not bound to the minimum,
# clio dd reads the whole export out and writes it in, the last byte
# included (the file compared byte for byte), over one and two
# connections, and writes a few bytes into the tail alone; clio info shows
# the minimum as the sector size and the tail; with a server that refuses
# the tail (blocksize-error-policy=error), opening it fails with one line
# naming the size and the minimum, and the file is untouched.  nbdcopy
# and qemu-img copy the odd export whole through clio serve.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
nbd_with_clio # clio serve: the sanitizer runtimes preloaded under ASan
seed=${SEED:-$(date +%s)}
trap 'rc=$?; [ $rc -ne 0 ] && echo "seed $seed (SEED=$seed to repeat)"; nbd_stop; rm -rf "$tmp"' EXIT
# gen FILE SIZE SALT: SIZE seeded random bytes
gen() {
	python3 -c 'import random, sys
r = random.Random(int(sys.argv[3]))
sys.stdout.buffer.write(r.randbytes(int(sys.argv[2])))' "$1" "$2" "$seed$3" >"$1"
}

# odd SIZE MIN: the export on $uri is $tmp/disk, SIZE bytes, minimum MIN
odd() {
	size=$1 min=$2 tail=$(($1 % $2))
	what="size $size, minimum $min"
	gen "$tmp/img" $size 1
	gen "$tmp/new" $size 2
	cp "$tmp/img" "$tmp/disk"
	nbd_start --filter=blocksize-policy file "$tmp/disk" \
		blocksize-minimum=$min blocksize-error-policy=allow
	"$CLIO" info "$uri" --json >"$tmp/info.json" || fail "$what: clio info"
	python3 - "$tmp/info.json" $size $min $tail <<'PY' || fail "$what: clio info --json"
import json, sys
j = json.load(open(sys.argv[1]))
size, m, tail = (int(a) for a in sys.argv[2:])
p = j["params"]
assert j["size"] == size and p["export_size"] == size, j
assert j["sector_size"] == max(m, 512) and p["block_min"] == m, j
assert p["unaligned_tail"] == tail, p
PY
	rm -f "$tmp/out"
	"$CLIO" dd if="$uri" of="$tmp/out" bs=64k 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "$what: clio dd out"; }
	cmp "$tmp/out" "$tmp/img" || fail "$what: the bytes read out differ"
	# in with writes of 1000 bytes (no multiple of the minimum)
	"$CLIO" dd if="$tmp/new" of="$uri" bs=1000 conv=notrunc,fsync 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "$what: clio dd in"; }
	cmp "$tmp/disk" "$tmp/new" || fail "$what: the file lacks bytes whose fsync returned"
	rm -f "$tmp/out"
	"$CLIO" dd if="$uri&conns=2" of="$tmp/out" bs=1M 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "$what: clio dd out over two connections"; }
	cmp "$tmp/out" "$tmp/new" || fail "$what: two connections: the bytes differ"
	# 7 bytes of the tail alone, 5 before the end
	printf 'TAILEND' >"$tmp/seven"
	"$CLIO" dd if="$tmp/seven" of="$uri" bs=7 oseek=$((size - 12)) oflag=seek_bytes \
		conv=notrunc,fsync 2>"$tmp/err" || { cat "$tmp/err"; fail "$what: 7 bytes into the tail"; }
	python3 - "$tmp/new" $((size - 12)) <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
o = int(sys.argv[2])
b[o:o + 7] = b"TAILEND"
open(sys.argv[1], "wb").write(b)
PY
	cmp "$tmp/disk" "$tmp/new" || fail "$what: 7 bytes into the tail: the file differs"
	rm -f "$tmp/out"
	"$CLIO" dd if="$uri" of="$tmp/out" bs=4k 2>"$tmp/err" && cmp "$tmp/out" "$tmp/new" ||
		{ cat "$tmp/err"; fail "$what: the tail read back"; }
	echo "ok: $what: the unaligned tail of $tail bytes read and written, compared"
}

odd 1000001 4096
odd 1000001 512
odd 4095 4096

# ------------------------------------------------------------ the peers
# nbdcopy and qemu-img on the same export (their outcome is shown, not
# asserted: libnbd refuses the unaligned tail, qemu asserts), and through
# clio serve, whose minimum divides the size: every byte, compared
size=1000001
gen "$tmp/img" $size 5
cp "$tmp/img" "$tmp/disk"
nbd_start --filter=blocksize-policy file "$tmp/disk" blocksize-minimum=4096 blocksize-error-policy=allow
inner=$nbd_pids
for peer in nbdcopy qemu-img; do
	command -v $peer >/dev/null 2>&1 || continue
	rm -f "$tmp/peer"
	case $peer in
	nbdcopy) nbdcopy "$uri" "$tmp/peer" 2>"$tmp/err";;
	qemu-img) qemu-img convert -f raw -O raw "$uri" "$tmp/peer" 2>"$tmp/err";;
	esac
	rc=$?
	[ $rc -eq 0 ] && cmp -s -n $size "$tmp/peer" "$tmp/img" && res="every byte" ||
		res="exit $rc: $(head -c 120 "$tmp/err" | head -n 1)"
	echo "info: $peer directly on size $size, minimum 4096: $res"
done
mv "$sock" "$tmp/inner"
env $nbd_env "$CLIO" serve "nbd+unix:///?socket=$tmp/inner" --socket "$sock" --pidfile "$tmp/serve.pid" ||
	fail "clio serve of the odd export did not start"
nbd_wait_pid "$tmp/serve.pid"
nbd_pids="$nbd_pids $inner"
for peer in nbdcopy qemu-img; do
	command -v $peer >/dev/null 2>&1 || continue
	rm -f "$tmp/peer"
	case $peer in
	nbdcopy) nbdcopy "$uri" "$tmp/peer" 2>"$tmp/err";;
	qemu-img) qemu-img convert -f raw -O raw "$uri" "$tmp/peer" 2>"$tmp/err";;
	esac || { cat "$tmp/err"; fail "$peer through clio serve of the odd export"; }
	cmp -n $size "$tmp/peer" "$tmp/img" || fail "$peer through clio serve: the bytes differ"
	echo "ok: $peer through clio serve of the odd export: every byte"
done
nbd_stop

# ------------------------------------------------------------ refused
size=1000001
gen "$tmp/img" $size 3
cp "$tmp/img" "$tmp/disk"
nbd_start --filter=blocksize-policy file "$tmp/disk" \
	blocksize-minimum=4096 blocksize-error-policy=error
msg="export size $size is not a multiple of the server's minimum block size 4096, and the server refuses a read of its last 577 bytes"
rm -f "$tmp/out"
"$CLIO" dd if="$uri" of="$tmp/out" bs=64k 2>"$tmp/err"
rc=$?
cat "$tmp/err"
[ $rc -eq 66 ] || fail "a server refusing the tail: clio dd out exit $rc, not 66"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "$msg" "$tmp/err" ||
	fail "a server refusing the tail: no one-line error naming the size and the minimum"
gen "$tmp/new" $size 4
"$CLIO" dd if="$tmp/new" of="$uri" bs=64k conv=notrunc,fsync 2>"$tmp/err"
rc=$?
[ $rc -eq 73 ] && grep -q "$msg" "$tmp/err" ||
	{ cat "$tmp/err"; fail "a server refusing the tail: clio dd in exit $rc, not 73"; }
cmp "$tmp/disk" "$tmp/img" || fail "a refused open wrote to the export"
echo "ok: a server refusing the tail: clio dd fails at open, naming the size and the minimum"
exit 0
