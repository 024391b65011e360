#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-dd-operands.sh - clio dd's operands: bad ones exit 64 with one line
# naming the value and touch nothing; good copies (file to file, ibs != obs,
# skip/seek/count, conv=notrunc, iflag/oflag=direct, pipes) give the same
# bytes and the same "records in/out" lines as GNU dd; --iostat prints
# lines, and names two devices whose names differ only after their 22nd
# character apart, each over its own columns, and a figure wider than its
# column (16384 KB/t) with fewer decimals, and a tiny interval
# (1e-300) does not hang it; --json parses and has its keys.
set -e
. "$(dirname "$0")/functions.sh"
export LC_ALL=C # the messages quote as in the C locale

# A GNU dd to compare with, if the machine has one.
gnu_dd=no
if dd --version 2>/dev/null | grep -q 'GNU coreutils'; then
	gnu_dd=yes
fi

SIZE=1234567
head -c "$SIZE" /dev/urandom >"$tmp/in"
head -c 2000000 /dev/urandom >"$tmp/old"
cp "$tmp/in" "$tmp/in.orig"

# ------------------------------------------------------------ bad operands

# bad NAME ARGS...: exit 64, one line on stderr naming NAME, no output file
bad() {
	name=$1
	shift
	rm -f "$tmp/out"
	cp "$tmp/old" "$tmp/keep"
	rc=0
	"$CLIO" dd "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
	[ "$rc" -eq 64 ] || fail "dd $*: exit $rc, want 64"
	[ "$(wc -l <"$tmp/stderr")" -eq 1 ] ||
		fail "dd $*: stderr is not one line: $(cat "$tmp/stderr")"
	grep -qF -- "$name" "$tmp/stderr" ||
		fail "dd $*: stderr does not name '$name': $(cat "$tmp/stderr")"
	[ ! -s "$tmp/stdout" ] || fail "dd $*: wrote to stdout"
	[ ! -e "$tmp/out" ] || fail "dd $*: created $tmp/out"
	cmp -s "$tmp/keep" "$tmp/old" || fail "dd $*: changed an existing output"
	cmp -s "$tmp/in" "$tmp/in.orig" || fail "dd $*: changed the input"
	echo "ok: $* -> $(cat "$tmp/stderr")"
}

bad foo=1 if="$tmp/in" of="$tmp/out" foo=1
bad "'0'" if="$tmp/in" of="$tmp/out" bs=0
bad 12Q if="$tmp/in" of="$tmp/out" bs=12Q
bad 12Q if="$tmp/in" of="$tmp/out" ibs=4k obs=12Q
bad abc if="$tmp/in" of="$tmp/out" count=abc
bad bogus if="$tmp/in" of="$tmp/out" conv=bogus
bad bogus if="$tmp/in" of="$tmp/out" conv=notrunc,bogus
bad bogus if="$tmp/in" of="$tmp/out" iflag=bogus
bad bogus if="$tmp/in" of="$tmp/out" oflag=direct,bogus
bad loud if="$tmp/in" of="$tmp/out" status=loud
bad sideways if="$tmp/in" of="$tmp/out" --cluster=sideways
bad 3000 if="$tmp/in" of="$tmp/out" --maxphys=3000
bad maxbsize if="$tmp/in" of="$tmp/out" --bsize=8k --maxbsize=4k
bad frobnicate if="$tmp/in" of="$tmp/out" --frobnicate=1
# bad values after an output that exists: it keeps its bytes
bad "'0'" if="$tmp/in" of="$tmp/keep" bs=0
bad bogus if="$tmp/in" of="$tmp/keep" conv=bogus
# bad device strings
bad nope if="$tmp/in" of=sim:preset=nope
bad 12Q if="$tmp/in" of=mem:size=12Q
bad fault:write=EIO if="$tmp/in" of=fault:write=EIO
bad EBOGUS if="$tmp/in" of="fault:write=EBOGUS@$tmp/out"
bad nope if=sim:preset=nope of="$tmp/out"
bad wat if="$tmp/in" of="wat:$tmp/out"

# ------------------------------------------------------------ good copies

# The records lines dd prints for a file of SIZE bytes read in full
# blocks (no skip or count).
records() { # IBS OBS
	awk -v s="$SIZE" -v i="$1" -v o="$2" 'BEGIN {
		printf "%d+%d records in\n%d+%d records out\n",
			int(s / i), (s % i > 0), int(s / o), (s % o > 0) }'
}

# copy NAME EXPECTED-FILE [RECORDS-FILE] -- DD-ARGS: clio dd into out,
# compare the bytes, and the first two lines of stderr with GNU dd's (run
# on a copy of out's old contents) or with RECORDS-FILE.
copy() {
	name=$1
	expect=$2
	shift 2
	recs=
	if [ "$1" != -- ]; then
		recs=$1
		shift
	fi
	shift
	cp "$tmp/out" "$tmp/gout" 2>/dev/null || rm -f "$tmp/gout"
	"$CLIO" dd "$@" 2>"$tmp/err" || fail "$name: clio dd $* exited $?: $(cat "$tmp/err")"
	cmp "$tmp/out" "$expect" || fail "$name: output differs"
	head -n 2 "$tmp/err" >"$tmp/rec"
	if [ "$gnu_dd" = yes ]; then
		# the same operands, with GNU dd's output in gout
		args=
		for a in "$@"; do
			case $a in
			of=*) a="of=$tmp/gout";;
			--*) continue;;
			esac
			args="$args $a"
		done
		# shellcheck disable=SC2086
		dd $args 2>"$tmp/gerr" || fail "$name: GNU dd failed: $(cat "$tmp/gerr")"
		head -n 2 "$tmp/gerr" >"$tmp/grec"
		cmp -s "$tmp/rec" "$tmp/grec" ||
			fail "$name: records differ: clio: $(cat "$tmp/rec"); GNU: $(cat "$tmp/grec")"
		cmp -s "$tmp/gout" "$expect" || fail "$name: GNU dd's output differs (test bug)"
	fi
	if [ -n "$recs" ]; then
		cmp -s "$tmp/rec" "$recs" ||
			fail "$name: records: $(cat "$tmp/rec"); want $(cat "$recs")"
	fi
	echo "ok: $name: $(tr '\n' ' ' <"$tmp/rec")"
}

rm -f "$tmp/out"
records 4096 4096 >"$tmp/r"
copy "file to file, bs=4k" "$tmp/in" "$tmp/r" -- if="$tmp/in" of="$tmp/out" bs=4k

rm -f "$tmp/out"
records 3000 4096 >"$tmp/r"
copy "ibs=3000 obs=4096" "$tmp/in" "$tmp/r" -- if="$tmp/in" of="$tmp/out" ibs=3000 obs=4096

rm -f "$tmp/out"
records 65536 1000 >"$tmp/r"
copy "ibs=64k obs=1000" "$tmp/in" "$tmp/r" -- if="$tmp/in" of="$tmp/out" ibs=64k obs=1000

rm -f "$tmp/out"
records 512 512 >"$tmp/r"
copy "default bs, small cache" "$tmp/in" "$tmp/r" -- if="$tmp/in" of="$tmp/out" \
	--cache-size=64k --bsize=4k

# skip, seek and count onto an existing file: truncated at seek
cp "$tmp/old" "$tmp/out"
{ head -c 20480 "$tmp/old"; tail -c +12289 "$tmp/in" | head -c 40960; } >"$tmp/expect"
printf '10+0 records in\n10+0 records out\n' >"$tmp/r"
copy "skip=3 seek=5 count=10" "$tmp/expect" "$tmp/r" -- \
	if="$tmp/in" of="$tmp/out" bs=4k skip=3 seek=5 count=10

# conv=notrunc keeps the tail
cp "$tmp/old" "$tmp/out"
{ head -c 40960 "$tmp/in"; tail -c +40961 "$tmp/old"; } >"$tmp/expect"
printf '10+0 records in\n10+0 records out\n' >"$tmp/r"
copy "conv=notrunc" "$tmp/expect" "$tmp/r" -- \
	if="$tmp/in" of="$tmp/out" bs=4k count=10 conv=notrunc
# and without it the tail goes
cp "$tmp/old" "$tmp/out"
head -c 40960 "$tmp/in" >"$tmp/expect"
copy "no conv=notrunc" "$tmp/expect" "$tmp/r" -- \
	if="$tmp/in" of="$tmp/out" bs=4k count=10

# conv=nocreat and conv=excl hold for a file: device string too (and
# for a device that always exists, as /dev/null with GNU dd's excl)
rm -f "$tmp/out"
if "$CLIO" dd if="$tmp/in" of="file:$tmp/out" conv=nocreat status=none 2>"$tmp/err"; then
	fail "conv=nocreat: file: created its file"
fi
[ ! -e "$tmp/out" ] || fail "conv=nocreat: file: created its file"
grep -q "No such file" "$tmp/err" || { cat "$tmp/err"; fail "conv=nocreat: not ENOENT"; }
cp "$tmp/old" "$tmp/out"
if "$CLIO" dd if="$tmp/in" of="file:$tmp/out" conv=excl status=none 2>"$tmp/err"; then
	fail "conv=excl: file: opened an existing file"
fi
grep -q "File exists" "$tmp/err" || { cat "$tmp/err"; fail "conv=excl: not EEXIST"; }
cmp "$tmp/old" "$tmp/out" || fail "conv=excl: file: changed the existing file"
if "$CLIO" dd if="$tmp/in" of=mem:size=4M conv=excl status=none 2>"$tmp/err"; then
	fail "conv=excl: mem: succeeded"
fi
grep -q "File exists" "$tmp/err" || { cat "$tmp/err"; fail "conv=excl: mem: not EEXIST"; }
rm -f "$tmp/out"
"$CLIO" dd if="$tmp/in" of="file:$tmp/out" conv=excl status=none ||
	fail "conv=excl: file: did not create its file"
cmp "$tmp/in" "$tmp/out" || fail "conv=excl: file: the new file differs"
# through a fault: wrapper, the file below decides
"$CLIO" dd if="$tmp/in" of="fault:write=EIO,offset=1G@file:$tmp/out2" conv=excl status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "conv=excl: fault: over a new file: refused"; }
cmp "$tmp/in" "$tmp/out2" || fail "conv=excl: fault: over file: the new file differs"
if "$CLIO" dd if="$tmp/in" of="fault:write=EIO,offset=1G@file:$tmp/out2" conv=excl status=none 2>"$tmp/err"; then
	fail "conv=excl: fault: over an existing file: opened it"
fi
grep -q "File exists" "$tmp/err" || { cat "$tmp/err"; fail "conv=excl: fault: over file: not EEXIST"; }
echo "ok: conv=nocreat and conv=excl on file: and mem: devices"

# the direct path, onto a longer file (truncated, as dd does), with a
# partial last block that O_DIRECT cannot take
cp "$tmp/old" "$tmp/out"
records 4096 4096 >"$tmp/r"
copy "iflag=direct oflag=direct" "$tmp/in" "$tmp/r" -- \
	if="$tmp/in" of="$tmp/out" bs=4k iflag=direct oflag=direct
rm -f "$tmp/out"
copy "iflag=direct conv=fsync" "$tmp/in" "$tmp/r" -- \
	if="$tmp/in" of="$tmp/out" bs=4k iflag=direct conv=fsync

# through the kernel's O_DIRECT, where $TMPDIR has it
if "$CLIO" dd if=/dev/zero of="file:$tmp/probe?direct=1" bs=4k count=1 2>/dev/null; then
	rm -f "$tmp/out2"
	"$CLIO" dd if="file:$tmp/in?direct=1" of="file:$tmp/out2?direct=1" bs=64k \
		iflag=direct oflag=direct 2>"$tmp/err" ||
		fail "O_DIRECT copy exited $?: $(cat "$tmp/err")"
	cmp "$tmp/out2" "$tmp/in" || fail "O_DIRECT copy differs"
	rm -f "$tmp/out2"
	"$CLIO" dd if="file:$tmp/in?direct=1" of="file:$tmp/out2?direct=1" bs=3000 \
		2>"$tmp/err" || fail "O_DIRECT buffered copy exited $?: $(cat "$tmp/err")"
	cmp "$tmp/out2" "$tmp/in" || fail "O_DIRECT buffered copy differs"
	echo "ok: copies through O_DIRECT files"
else
	echo "skip: no O_DIRECT in $tmp"
fi

# standard input to standard output, through pipes
cat "$tmp/in" | "$CLIO" dd bs=4k 2>"$tmp/err" | cat >"$tmp/out" ||
	fail "pipe copy failed: $(cat "$tmp/err")"
cmp "$tmp/out" "$tmp/in" || fail "pipe copy differs"
grep -q "^$SIZE bytes" "$tmp/err" || fail "pipe copy: no byte count: $(cat "$tmp/err")"
grep -q 'records in$' "$tmp/err" || fail "pipe copy: no records line"
cat "$tmp/in" | "$CLIO" dd ibs=1000 obs=3000 2>"$tmp/err" | cat >"$tmp/out" ||
	fail "pipe copy failed: $(cat "$tmp/err")"
cmp "$tmp/out" "$tmp/in" || fail "pipe copy, ibs=1000 obs=3000, differs"
"$CLIO" dd bs=4k skip=2 count=5 <"$tmp/in" >"$tmp/out" 2>"$tmp/err" ||
	fail "redirected copy failed: $(cat "$tmp/err")"
tail -c +8193 "$tmp/in" | head -c 20480 >"$tmp/expect"
cmp "$tmp/out" "$tmp/expect" || fail "stdin skip=2 count=5 differs"
"$CLIO" dd if="$tmp/in" bs=64k status=none | cmp - "$tmp/in" || fail "file to stdout differs"
echo "ok: pipes"

# status=none prints nothing; status=noxfer only the records
"$CLIO" dd if="$tmp/in" of="$tmp/out" bs=4k status=none 2>"$tmp/err"
[ ! -s "$tmp/err" ] || fail "status=none printed: $(cat "$tmp/err")"
"$CLIO" dd if="$tmp/in" of="$tmp/out" bs=4k status=noxfer 2>"$tmp/err"
grep -q 'copied' "$tmp/err" && fail "status=noxfer printed the transfer line"
grep -q 'records out' "$tmp/err" || fail "status=noxfer lost the records"

# ------------------------------------------------------------ GNU dd's rest

# --help and --version: every subcommand, exit 0, on standard output
for c in dd mount umount stat bench; do
	"$CLIO" $c --help >"$tmp/stdout" 2>"$tmp/stderr" || fail "clio $c --help exited $?"
	grep -q "usage: clio $c" "$tmp/stdout" || fail "clio $c --help: no usage: $(cat "$tmp/stdout")"
	[ ! -s "$tmp/stderr" ] || fail "clio $c --help wrote to stderr"
	[ "$("$CLIO" $c --version)" = "$("$CLIO" --version)" ] || fail "clio $c --version"
done
"$CLIO" --version | grep -q '^clio [0-9]' || fail "clio --version"
echo "ok: --help and --version"
bad "'--foo'" if="$tmp/in" of="$tmp/out" --foo
bad "'--frob'" if="$tmp/in" of="$tmp/out" --frob 1
bad "fault:write=EIO@'" if="$tmp/in" of="fault:write=EIO@"
bad "ibs=1000" if="$tmp/in" of="$tmp/out" bs=1000 iflag=direct
bad "obs=1000" if="$tmp/in" of="$tmp/out" ibs=4k obs=1000 oflag=direct
bad "seek=100" if="$tmp/in" of="$tmp/out" bs=4k seek=100B oflag=direct

# open errors name the path once; a directory as input is EX_NOINPUT
rc=0
"$CLIO" dd if="$tmp/nonexistent" of="$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 66 ] || fail "missing input: exit $rc"
[ "$(grep -o "$tmp/nonexistent" "$tmp/err" | wc -l)" -eq 1 ] ||
	fail "missing input: the path is not named once: $(cat "$tmp/err")"
rc=0
"$CLIO" dd if="$tmp" of="$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc -eq 66 ] || fail "directory input: exit $rc: $(cat "$tmp/err")"
echo "ok: open errors"

# iflag=direct and oflag=direct open the files with O_DIRECT
if command -v strace >/dev/null 2>&1 &&
	"$CLIO" dd if=/dev/zero of="file:$tmp/probe?direct=1" bs=4k count=1 2>/dev/null; then
	rm -f "$tmp/out"
	# LeakSanitizer does not run under ptrace
	ASAN_OPTIONS=detect_leaks=0 strace -f -qq -e trace=openat -o "$tmp/trace" "$CLIO" dd if="$tmp/in" \
		of="$tmp/out" bs=64k iflag=direct oflag=direct 2>"$tmp/err" ||
		fail "direct copy failed: $(cat "$tmp/err")"
	cmp "$tmp/in" "$tmp/out" || fail "direct copy differs"
	grep "\"$tmp/in\"" "$tmp/trace" | grep -q O_DIRECT || fail "the input has no O_DIRECT"
	grep "\"$tmp/out\"" "$tmp/trace" | grep -q O_DIRECT || fail "the output has no O_DIRECT"
	echo "ok: O_DIRECT on both files"
else
	echo "skip: no strace or no O_DIRECT in $tmp"
fi

# conv=noerror: a read error is reported with the statistics and the copy
# goes on past the bad block; with sync it is replaced by zeros (the
# direct path reads block by block: the cache would fail a whole cluster)
rm -f "$tmp/out"
"$CLIO" dd if="fault:read=EIO,offset=8K,length=4K@$tmp/in" of="$tmp/out" bs=4k iflag=direct \
	conv=noerror,sync 2>"$tmp/err" || fail "noerror: exit $?: $(cat "$tmp/err")"
grep -q "error reading 'fault:read=EIO" "$tmp/err" || fail "noerror: no message"
[ "$(grep -c 'records in$' "$tmp/err")" -eq 2 ] || fail "noerror: no statistics at the error"
{ head -c 8192 "$tmp/in"; head -c 4096 /dev/zero; tail -c +12289 "$tmp/in"; } >"$tmp/expect"
s=$(wc -c <"$tmp/in")
truncate -s $(( (s + 4095) / 4096 * 4096 )) "$tmp/expect"
cmp "$tmp/out" "$tmp/expect" || fail "noerror,sync: the output is not the input with a zero block"
echo "ok: conv=noerror,sync"

# seek= on a standard output that is a file
head -c 3000 "$tmp/old" >"$tmp/out"
"$CLIO" dd if="$tmp/in" bs=1000 seek=2 count=1 status=none 1<>"$tmp/out"
{ head -c 2000 "$tmp/old"; head -c 1000 "$tmp/in"; } | cmp - "$tmp/out" ||
	fail "seek= on standard output"
echo "ok: seek= on a standard output file"

# a block size above 2 GiB, where memory allows
if [ "$(awk '/MemAvailable/ { print $2 }' /proc/meminfo)" -gt 8000000 ] &&
	[ "${CLIO_FLAVOUR:-plain}" = plain ]; then
	# a short read into the big buffer (the 2 GiB - 4 KiB that Linux
	# gives one read of /dev/zero costs 15 s of page faults here)
	printf 0123456789 | "$CLIO" dd of="$tmp/out3g" bs=3G count=1 2>"$tmp/err" ||
		fail "bs=3G: exit $?: $(cat "$tmp/err")"
	grep -q '^0+1 records in$' "$tmp/err" &&
		grep -q '^10 bytes copied, ' "$tmp/err" && [ "$(cat "$tmp/out3g")" = 0123456789 ] ||
		fail "bs=3G: $(cat "$tmp/err")"
	"$CLIO" dd if=/dev/zero of=/dev/null bs=3G count=1 iflag=fullblock 2>"$tmp/err" ||
		fail "bs=3G iflag=fullblock: exit $?: $(cat "$tmp/err")"
	grep -q '^1+0 records in$' "$tmp/err" &&
		grep -q '^3221225472 bytes (3.2 GB, 3.0 GiB) copied, ' "$tmp/err" ||
		fail "bs=3G iflag=fullblock: $(cat "$tmp/err")"
	echo "ok: bs=3G, one read and full blocks"
fi

# ------------------------------------------------------------ --iostat

"$CLIO" dd if=sim:preset=da2002 of=/dev/null bs=1M count=100 --iostat=1 2>"$tmp/err" ||
	fail "--iostat run failed: $(cat "$tmp/err")"
grep -q 'KB/t' "$tmp/err" || fail "--iostat: no header"
n=$(awk '$1 ~ /^[0-9]+\.[0-9][0-9]$/ && NF == 4 && $2 == "64.00" { n++ } END { print n + 0 }' "$tmp/err")
[ "$n" -ge 3 ] || fail "--iostat=1: $n interval lines in: $(cat "$tmp/err")"
echo "ok: --iostat=1 printed $n lines"
# two names alike in their first 22 characters: told apart, columns aligned
mkdir "$tmp/a-directory-with-a-long-name"
ln="$tmp/a-directory-with-a-long-name/input-file"
head -c 4M /dev/zero >"$ln-one"
"$CLIO" dd if="$ln-one" of="$ln-two" bs=64k --iostat=0.01 2>"$tmp/err" ||
	fail "--iostat run failed: $(cat "$tmp/err")"
head -n 1 "$tmp/err" | grep -q 'file-one .*file-two$' ||
	fail "--iostat: the devices are not told apart: $(head -n 1 "$tmp/err")"
awk 'NR == 1 { w = length($0) } NR > 1 && /^ *[0-9s]/ && NF >= 4 && length($0) != w { exit 1 }
	/records in/ { exit 0 }' "$tmp/err" || { cat "$tmp/err"; fail "--iostat: columns not aligned"; }
echo "ok: --iostat names two long, alike devices apart"
# 16 MiB transfers: 16384 KB/t loses a decimal, not its column's place
"$CLIO" dd if=/dev/zero of=mem:size=64M bs=16M count=4 --maxphys=16M --iostat=0.001 \
	2>"$tmp/err" || fail "--iostat run failed: $(cat "$tmp/err")"
grep -q ' 16384.0 ' "$tmp/err" || fail "--iostat: no 16 MiB transfer: $(cat "$tmp/err")"
awk 'NR == 1 { w = length($0) } /records in/ { exit 0 } length($0) != w { exit 1 }' "$tmp/err" ||
	{ cat "$tmp/err"; fail "--iostat: 16384 KB/t out of its column"; }
echo "ok: --iostat keeps 16384 KB/t in its column"
# an interval far below the clock's resolution at the time: no hang
rc=0
timeout -k 5 30 "$CLIO" dd if=/dev/zero of=mem:size=1M count=100 --iostat=1e-300 2>"$tmp/err" || rc=$?
[ $rc -eq 0 ] || fail "--iostat=1e-300: exit $rc (124: it hung): $(tail -n 3 "$tmp/err")"
grep -q '^100+0 records out$' "$tmp/err" || fail "--iostat=1e-300: $(tail -n 3 "$tmp/err")"
echo "ok: --iostat=1e-300 ends"

# ------------------------------------------------------------ --json

rm -f "$tmp/out"
"$CLIO" dd if="$tmp/in" of="$tmp/out" bs=4k --json >"$tmp/json" 2>"$tmp/err" ||
	fail "--json run failed: $(cat "$tmp/err")"
cmp "$tmp/out" "$tmp/in" || fail "--json copy differs"
[ "$(wc -l <"$tmp/json")" -eq 1 ] || fail "--json: not one line"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/json" "$tmp/in" "$tmp/out" "$SIZE" <<'PY' || fail "--json check failed"
import json, sys
path, src, dst, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
j = json.load(open(path))
for k in ("elapsed_s", "clock", "bytes_copied", "devices", "cache"):
    assert k in j, k
assert j["clock"] == "real", j["clock"]
assert j["bytes_copied"] == size, j["bytes_copied"]
assert j["elapsed_s"] > 0
devs = {d["name"]: d for d in j["devices"]}
assert set(devs) == {src, dst}, devs.keys()
for d in devs.values():
    for k in ("name", "reads", "writes", "read_bytes", "write_bytes", "busy_s"):
        assert k in d, k
    assert d["busy_s"] >= 0
i, o = devs[src], devs[dst]
assert i["reads"] > 0 and i["read_bytes"] >= size and i["writes"] == 0, i
# what the output's device got, including the write-back at close
assert o["write_bytes"] == size and o["writes"] > 0, o
assert o["reads"] == 0, o
for k in ("hits", "misses", "readahead_blocks", "write_clusters"):
    assert isinstance(j["cache"][k], int), k
assert j["cache"]["readahead_blocks"] > 0
assert j["cache"]["write_clusters"] > 0
print("ok: --json parses: %d bytes, %d/%d transfers" %
      (j["bytes_copied"], i["reads"], o["writes"]))
PY
else
	for k in elapsed_s clock bytes_copied devices name reads writes read_bytes \
		write_bytes busy_s cache hits misses readahead_blocks write_clusters; do
		grep -q "\"$k\": " "$tmp/json" || fail "--json: no key $k"
	done
	echo "ok: --json has its keys (no python3 to parse it)"
fi
exit 0
