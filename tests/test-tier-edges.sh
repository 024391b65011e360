#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-edges.sh - the disk tier at its edges, through clio dd: a
# disk_cache_size below one block (both modes: the right bytes, exit 0);
# another writer's change made right after a run is seen by the next;
# two clio dd at once on one file and one DIR (the second runs without
# the object); a second writer while the first holds the object (its
# block, already in the first's entries, is read as the second wrote
# it); clio dd killed (-9) at random moments of a writeback copy,
# then a read-only restart reads the dirty blocks from DIR, one for
# writing writes them back (the file then has what the first read):
# every page of the output is the old or the new one, no dirty block is
# left, and a read through the tier gives the file's bytes; clio serve -o with the tier's
# tunables (writeback, brun/bcull/bstop) keeps the file's blocks in DIR
# and what a client wrote and flushed reaches the file; bad tunables are refused by clio dd,
# clio mount and clio serve with one line naming the value.
# CLIO_TEST_SEED=N repeats the random kill points.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"

seed=${CLIO_TEST_SEED:-$(date +%s)}
echo "seed $seed (CLIO_TEST_SEED=$seed repeats it)"
dc="$tmp/dc"
mkdir "$dc"
head -c 2000000 /dev/urandom >"$tmp/a"

# ------------------------------------------------------------ below one block
for mode in writethrough writeback; do
	rm -f "$tmp/o"
	head -c 2000000 /dev/zero >"$tmp/o"
	"$CLIO" dd if="$tmp/a" of="$tmp/o" bs=64k conv=notrunc,fsync --disk-cache="$dc" \
		--disk-cache-size=1000 --disk-cache-mode=$mode 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "disk_cache_size=1000 ($mode)"; }
	cmp "$tmp/a" "$tmp/o" || fail "disk_cache_size=1000 ($mode): the copy differs"
	"$CLIO" dd if="$tmp/o" of="$tmp/o2" bs=64k --disk-cache="$dc" \
		--disk-cache-size=1000 --disk-cache-mode=$mode 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "disk_cache_size=1000 ($mode), reading back"; }
	cmp "$tmp/a" "$tmp/o2" || fail "disk_cache_size=1000 ($mode): the read back differs"
done
echo "ok: a disk_cache_size below one block: the right bytes in both modes"

# ------------------------------------------------------------ a change at once
# another writer right after the run that wrote the file (and recorded
# its version): the next run sees it
for i in 1 2 3 4 5; do
	"$CLIO" dd if="$tmp/a" of="$tmp/w" bs=64k --disk-cache="$dc" 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "writing $tmp/w"; }
	printf 'x%d' "$i" | dd of="$tmp/w" bs=1 seek=$((i * 70001)) conv=notrunc 2>/dev/null
	"$CLIO" dd if="$tmp/w" of="$tmp/w2" bs=64k --disk-cache="$dc" 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "reading $tmp/w"; }
	cmp "$tmp/w" "$tmp/w2" || fail "round $i: a stale byte after a change made at once"
done
echo "ok: a change made right after a run is seen by the next"

# ------------------------------------------------------------ two at once
rm -rf "$dc"
mkdir "$dc"
head -c 8000000 /dev/urandom >"$tmp/big"
"$CLIO" dd if="$tmp/big" of="$tmp/b1" bs=64k --disk-cache="$dc" 2>"$tmp/err1" &
p1=$!
"$CLIO" dd if="$tmp/big" of="$tmp/b2" bs=64k --disk-cache="$dc" 2>"$tmp/err2" ||
	{ cat "$tmp/err2"; kill "$p1" 2>/dev/null; fail "the second clio dd at once"; }
wait "$p1" || { cat "$tmp/err1"; fail "the first clio dd at once"; }
cmp "$tmp/big" "$tmp/b1" && cmp "$tmp/big" "$tmp/b2" || fail "two at once: a copy differs"
"$CLIO" dd if="$tmp/big" of="$tmp/b3" bs=64k --disk-cache="$dc" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd after two at once"; }
cmp "$tmp/big" "$tmp/b3" || fail "after two at once: the copy differs"
echo "ok: two clio dd at once on one file and one DIR"

# ------------------------------------------------------------ two writers at once
# the first writes the file slowly (each write to the device); the second,
# while the first holds the object, rewrites the block the first wrote
# already: the next read through DIR has the second's bytes, not the
# first's entry
rm -rf "$dc"
mkdir "$dc"
head -c 3145728 /dev/urandom >"$tmp/slow"
head -c 65536 /dev/urandom >"$tmp/blk"
head -c 3145728 /dev/zero >"$tmp/w"
python3 -c '
import sys, time
d = open(sys.argv[1], "rb").read()
for i in range(0, len(d), 131072):
    sys.stdout.buffer.write(d[i:i + 131072]); sys.stdout.flush(); time.sleep(0.1)
' "$tmp/slow" | "$CLIO" dd if=/dev/stdin of="$tmp/w" bs=64k iflag=fullblock conv=notrunc \
	oflag=dsync --disk-cache="$dc" >/dev/null 2>"$tmp/err1" &
p1=$!
i=0
until cmp -s -n 65536 "$tmp/slow" "$tmp/w"; do
	i=$((i + 1))
	[ $i -lt 100 ] || { kill "$p1"; fail "the first writer wrote nothing"; }
	sleep 0.05
done
"$CLIO" dd if="$tmp/blk" of="$tmp/w" bs=64k conv=notrunc --disk-cache="$dc" \
	>/dev/null 2>"$tmp/err2" || { cat "$tmp/err2"; kill "$p1"; fail "the second writer"; }
wait "$p1" || { cat "$tmp/err1"; fail "the first writer"; }
cmp -s -n 65536 "$tmp/blk" "$tmp/w" || fail "the second writer's block is not in the file (the test is wrong)"
"$CLIO" dd if="$tmp/w" of="$tmp/w2" bs=64k --disk-cache="$dc" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "reading the file of two writers"; }
cmp "$tmp/w" "$tmp/w2" || fail "two writers at once: the first's entry was read, not the file's bytes"
[ -z "$(find "$dc" -name bypass)" ] || fail "the mark of the second writer stays"
echo "ok: two writers at once: the read after them has the file's bytes"

# ------------------------------------------------------------ kill -9, writeback
# pages: every 4 KiB page of $1 is that of $2 (old) or of $3 (new)
pages() {
	python3 - "$@" <<'PY'
import sys
f, old, new = (open(p, "rb").read() for p in sys.argv[1:4])
if len(f) != len(old):
    sys.exit("size %d, not %d" % (len(f), len(old)))
for o in range(0, len(f), 4096):
    if f[o:o+4096] != old[o:o+4096] and f[o:o+4096] != new[o:o+4096]:
        sys.exit("page at %d is neither old nor new" % o)
PY
}
rm -rf "$dc"
mkdir "$dc"
head -c 8000000 /dev/urandom >"$tmp/old"
: >"$tmp/empty"
killed=0
s=$seed
for round in 1 2 3 4 5 6; do
	s=$(( (s * 1103515245 + 12345) % 2147483648 ))
	ms=$(( 10 + s % 150 ))
	cp "$tmp/old" "$tmp/dst"
	"$CLIO" dd if="$tmp/big" of="$tmp/dst" bs=64k conv=notrunc,fsync \
		--disk-cache="$dc" --disk-cache-mode=writeback 2>"$tmp/err" &
	p=$!
	sleep "$(printf '0.%03d' "$ms")"
	if kill -9 "$p" 2>/dev/null; then
		wait "$p" 2>/dev/null
		killed=$((killed + 1))
	else
		wait "$p" || { cat "$tmp/err"; fail "round $round: clio dd failed (seed $seed)"; }
		cmp "$tmp/big" "$tmp/dst" || fail "round $round: a completed copy differs (seed $seed)"
	fi
	# a read-only restart reads the dirty blocks from DIR; one for
	# writing writes them back first: the file then has what it read
	"$CLIO" dd if="$tmp/dst" of="$tmp/r1" bs=64k --disk-cache="$dc" 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "round $round: the read-only restart (seed $seed)"; }
	"$CLIO" dd if="$tmp/empty" of="$tmp/dst" conv=notrunc --disk-cache="$dc" 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "round $round: the restart for writing (seed $seed)"; }
	cmp "$tmp/dst" "$tmp/r1" || fail "round $round: the read-only restart read other bytes than the recovered file's (seed $seed, ${ms} ms)"
	pages "$tmp/dst" "$tmp/old" "$tmp/big" || fail "round $round: torn output (seed $seed, ${ms} ms)"
	"$CLIO" dd if="$tmp/dst" of="$tmp/r" bs=64k --disk-cache="$dc" --json \
		--disk-cache-mode=writeback >"$tmp/j" 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "round $round: reading after the restart (seed $seed)"; }
	cmp "$tmp/dst" "$tmp/r" || fail "round $round: other bytes than the file's after the restart (seed $seed, ${ms} ms)"
	dirty=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0]["disk_cache"]["dirty"])' "$tmp/j")
	[ "$dirty" = 0 ] || fail "round $round: $dirty dirty blocks after the restart"
done
echo "ok: clio dd killed in writeback ($killed of 6 rounds): old or new pages, nothing stale"

# ------------------------------------------------------------ clio serve
if [ "${CLIO_FLAVOUR:-plain}" = tsan ]; then
	echo "skip: clio serve under TSan (nbdkit cannot load a TSan plugin)"
else
rm -rf "$dc"
mkdir "$dc"
cp "$tmp/old" "$tmp/sv"
head -c 1048576 /dev/urandom >"$tmp/pat"
# nbdkit is no sanitized program: under ASan the plugin needs the
# runtime loaded first (the plugin's leaks are not checked)
serve_env=""
if [ "${CLIO_FLAVOUR:-plain}" = asan ]; then
	serve_env="LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so) ASAN_OPTIONS=detect_leaks=0"
fi
env $serve_env "$CLIO" serve "$tmp/sv" --socket "$sock" --pidfile "$tmp/pid" \
	-o "disk_cache=$dc,disk_cache_mode=writeback,disk_cache_brun=20,disk_cache_bcull=10,disk_cache_bstop=2" \
	2>"$tmp/err" || { cat "$tmp/err"; fail "clio serve with the tier's tunables"; }
nbd_wait_pid "$tmp/pid"
"$CLIO" dd if="$uri" of="$tmp/s1" bs=256k 2>"$tmp/err" || { cat "$tmp/err"; fail "reading from clio serve"; }
cmp "$tmp/old" "$tmp/s1" || fail "clio serve: the bytes read differ"
"$CLIO" dd if="$tmp/pat" of="$uri" bs=256k seek=8 conv=notrunc,fsync 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "writing through clio serve"; }
nbd_stop
obj=$(grep -al "path=$tmp/sv" "$dc"/*/meta | head -n 1)
[ -n "$obj" ] || fail "clio serve: no object of the file in DIR"
[ "$(stat -c %s "$(dirname "$obj")/data")" -gt 0 ] || fail "clio serve: DIR holds no block"
python3 - "$tmp/old" "$tmp/pat" "$tmp/want" <<'PY'
import sys
o = bytearray(open(sys.argv[1], "rb").read())
p = open(sys.argv[2], "rb").read()
o[8 * 262144:8 * 262144 + len(p)] = p
open(sys.argv[3], "wb").write(o)
PY
cmp "$tmp/want" "$tmp/sv" || fail "clio serve: what the client flushed is not in the file once the server stopped"
echo "ok: clio serve -o with the tier's tunables: blocks in DIR, the flushed write in the file"
fi

# ------------------------------------------------------------ bad tunables
# one line naming the value, from each front end
bad() { # WHAT VALUE COMMAND...
	what=$1 val=$2
	shift 2
	if timeout 20 "$@" >"$tmp/out" 2>"$tmp/err"; then
		fusermount3 -u -q "$tmp/mnt" 2>/dev/null
		fail "$what: '$val' was accepted"
	fi
	grep -q -e "'$val'" -e "${key#disk_cache_} $val " "$tmp/err" ||
		{ cat "$tmp/err"; fail "$what: the error does not name '$val'"; }
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "$what: not one line"; }
}
mkdir "$tmp/mnt" "$tmp/src"
for kv in disk_cache_size=lots disk_cache_size=-5 disk_cache_brun=200 \
	disk_cache_bcull=abc disk_cache_bstop=9 disk_cache_mode=sometimes \
	disk_cache_verify=all; do
	key=${kv%%=*} v=${kv#*=}
	opt=$(echo "$key" | tr _ -)
	bad "clio dd --$opt" "$v" "$CLIO" dd if="$tmp/a" of=/dev/null --disk-cache="$dc" "--$opt=$v"
	bad "clio mount -o $kv" "$v" "$CLIO" mount -o "disk_cache=$dc,$kv" "$tmp/src" "$tmp/mnt"
	bad "clio serve -o $kv" "$v" "$CLIO" serve -o "disk_cache=$dc,$kv" -f \
		--socket "$tmp/sock" "$tmp/a"
done
echo "ok: bad disk cache tunables are refused by dd, mount and serve, each named"
