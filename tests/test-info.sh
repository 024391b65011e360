#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-info.sh - clio info: a file (size, engine uring, and threads with
# the reason when CLIO_NO_URING=1 forces the fallback), a sim preset with
# its model's parameters, a fault device with its inner one, --json parsed
# by python3's json.tool with the same figures, --help, and errors: one
# line naming the value, exit 64 for bad usage or a malformed string, 66
# for a device that cannot be opened.
set -e
. "$(dirname "$0")/functions.sh"

# field NAME FILE: the value of "NAME:" in clio info's text output
field() {
	sed -n "s/^$1: *//p" "$2" | head -n 1
}

head -c 1000000 /dev/urandom >"$tmp/f"

# ------------------------------------------------------------ a file
"$CLIO" info "$tmp/f" >"$tmp/out"
cat "$tmp/out"
[ "$(field size "$tmp/out")" = "1000000 (977 KiB)" ] || fail "file: size"
[ "$(field 'sector size' "$tmp/out")" = 512 ] || fail "file: sector size"
[ "$(field maxio "$tmp/out")" = none ] || fail "file: maxio"
[ "$(field clock "$tmp/out")" = real ] || fail "file: clock"
[ "$(field 'queue depth' "$tmp/out")" = 4 ] || fail "file: queue depth"
grep -qx "  path=$tmp/f" "$tmp/out" || fail "file: path not among the parameters"
engine=$(field engine "$tmp/out")
case $engine in
uring) echo "ok: engine uring";;
"threads (io_uring_queue_init: "*) echo "ok: no io_uring here: $engine";;
*) fail "file: engine '$engine'";;
esac

"$CLIO" info "file:$tmp/f?qd=64&engine=threads&maxio=256K" >"$tmp/out"
[ "$(field engine "$tmp/out")" = "threads (engine=threads)" ] || fail "engine=threads"
[ "$(field 'queue depth' "$tmp/out")" = 64 ] || fail "qd=64"
[ "$(field maxio "$tmp/out")" = "262144 (256 KiB)" ] || fail "maxio=256K"

# the fallback forced, and reported
CLIO_NO_URING=1 "$CLIO" info "$tmp/f" >"$tmp/out"
[ "$(field engine "$tmp/out")" = "threads (CLIO_NO_URING=1)" ] ||
	fail "CLIO_NO_URING=1: engine '$(field engine "$tmp/out")'"
echo "ok: CLIO_NO_URING=1 -> $(field engine "$tmp/out")"
CLIO_NO_URING=1 "$CLIO" info --json "$tmp/f" >"$tmp/json"
python3 -m json.tool "$tmp/json" >/dev/null || fail "--json does not parse"
grep -q '"engine": "threads", "engine_reason": "CLIO_NO_URING=1"' "$tmp/json" ||
	fail "--json: engine and reason: $(cat "$tmp/json")"

# ------------------------------------------------------------ sim, fault
"$CLIO" info sim:preset=rz25 >"$tmp/out"
[ "$(field type "$tmp/out")" = sim ] || fail "sim: type"
[ "$(field clock "$tmp/out")" = virtual ] || fail "sim: clock"
[ "$(field maxio "$tmp/out")" = "65536 (64 KiB)" ] || fail "sim: maxio"
[ "$(field size "$tmp/out")" = "446693376 (426 MiB)" ] || fail "sim: size"
for kv in preset=rz25 rpm=5400 spt=57 heads=8 skew=7 seek_a=1.67 seek_b=0.38 \
	overhead=1.5 bus=7.2 ra=28672 wcache=0 maxio=65536 clock=virtual; do
	grep -qx "  $kv" "$tmp/out" || fail "sim:preset=rz25: no '$kv'"
done
echo "ok: rz25's parameters"
"$CLIO" info --json 'sim:preset=ssd,clock=real,qd=8' >"$tmp/json"
python3 -m json.tool "$tmp/json" >"$tmp/pretty" || fail "sim --json does not parse"
python3 - "$tmp/json" <<'PY' || fail "sim --json: figures"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["type"] == "sim" and j["clock"] == "real", j
assert j["queue_depth"] == 8 and j["maxio"] == 1048576, j
assert j["params"]["overhead"] == 0.065 and j["params"]["rate"] == 1400, j
assert j["params"]["wcache"] == 64 << 20 and j["params"]["preset"] == "ssd", j
assert j["engine"] == "threads" and "sleeps" in j["engine_reason"], j
PY
echo "ok: sim --json"

"$CLIO" info "fault:write=EIO,offset=1M,length=64K@file:$tmp/f" >"$tmp/out"
cat "$tmp/out"
[ "$(field type "$tmp/out")" = fault ] || fail "fault: type"
[ "$(field size "$tmp/out")" = "1000000 (977 KiB)" ] || fail "fault: size"
for kv in write=EIO offset=1048576 length=65536 "inner=$tmp/f" \
	"inner.path=$tmp/f" inner.engine=threads; do
	grep -qx "  $kv" "$tmp/out" || fail "fault: no '$kv'"
done
"$CLIO" info --json "fault:read=EIO@mem:size=1M" | python3 -m json.tool >/dev/null ||
	fail "fault --json does not parse"
echo "ok: fault"

"$CLIO" info --help >"$tmp/out" || fail "--help: exit $?"
grep -q "usage: clio info DEVICE" "$tmp/out" || fail "--help: no usage"
"$CLIO" help | grep -q "clio info DEVICE" || fail "clio help lacks info"

# ------------------------------------------------------------ errors
# bad WANT NAME ARGS...: exit WANT, one line on stderr naming NAME
bad() {
	want=$1 name=$2
	shift 2
	rc=0
	"$CLIO" info "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
	[ "$rc" -eq "$want" ] || fail "info $*: exit $rc, want $want"
	[ "$(wc -l <"$tmp/stderr")" -eq 1 ] ||
		fail "info $*: stderr is not one line: $(cat "$tmp/stderr")"
	grep -qF -- "$name" "$tmp/stderr" ||
		fail "info $*: stderr does not name '$name': $(cat "$tmp/stderr")"
	[ ! -s "$tmp/stdout" ] || fail "info $*: wrote to stdout"
	echo "ok: info $* -> $rc $(cat "$tmp/stderr")"
}
bad 64 "usage"
bad 64 "--frob" --frob "$tmp/f"
bad 64 "mem:size=1M" "$tmp/f" mem:size=1M
bad 64 "12Q" mem:size=12Q
bad 64 "nope" sim:preset=nope
bad 64 "aio" "file:$tmp/f?engine=aio"
bad 64 "1M?x" "$(printf 'mem:size=1M\nx')" # a newline in the value: still one line
bad 66 "$tmp/missing" "$tmp/missing"
[ "$(grep -o -F "$tmp/missing" "$tmp/stderr" | wc -l)" -eq 1 ] ||
	fail "a missing file is named more than once: $(cat "$tmp/stderr")"
bad 66 "nbd+unix:///?socket=$tmp/nosock" "nbd+unix:///?socket=$tmp/nosock"
[ "$(grep -o -F "socket=$tmp/nosock" "$tmp/stderr" | wc -l)" -eq 1 ] &&
	grep -q "connect" "$tmp/stderr" ||
	fail "an NBD socket that is not there: $(cat "$tmp/stderr")"
rc=0
CLIO_NO_URING=1 "$CLIO" info "file:$tmp/f?engine=uring" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
[ "$rc" -eq 66 ] || fail "engine=uring with CLIO_NO_URING=1: exit $rc, want 66"
[ "$(wc -l <"$tmp/stderr")" -eq 1 ] && grep -q "engine .uring. unavailable" "$tmp/stderr" ||
	fail "engine=uring unavailable: $(cat "$tmp/stderr")"
echo "ok: engine=uring unavailable -> $rc $(cat "$tmp/stderr")"
