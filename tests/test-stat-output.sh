#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-stat-output.sh - clio stat's figures against what was done: a
# directory mounted with kernel_cache=off (each write(2), and each
# read(2) with O_DIRECT, reaches clio as it is) gets N bytes written,
# closed, then read: the
# totals since the mount hold them after the close (requests, cache,
# storage), in the summary and in --json (parsed by python3 -m
# json.tool); an open file has one line, named by its path and its
# source file (never /proc/self/fd); a relative image is shown as given;
# -i -c COUNT prints COUNT reports whose first (since the mount) agrees
# with the totals, in the BSD view and with -x; two mount points that
# differ only far from their end stay distinct when shortened; --raw
# prints the control file's lines; clio dd's
# summary adds the -x figures of the run; --help exits 0, bad arguments 64.
set -e
. "$(dirname "$0")/mount-common.sh"
if ! command -v python3 >/dev/null 2>&1; then
	echo "skip: python3 is missing" >&2
	exit 77
fi
src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt"
N=3000000

# json EXPR: EXPR in python, with m the first mount of clio stat --json
json() {
	"$CLIO" stat --json "$mnt" >"$tmp/json" || fail "clio stat --json exits $?"
	python3 -m json.tool "$tmp/json" >/dev/null || fail "--json is no JSON: $(cat "$tmp/json")"
	python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))["mounts"][0]
print(eval(sys.argv[2]))' "$tmp/json" "$1"
}
# want NAME GOT WANT
want() { [ "$2" = "$3" ] || fail "$1: $2, want $3"; echo "ok: $1 = $2"; }

mount_start "$src" "$mnt" -o kernel_cache=off
dd if=/dev/urandom of="$mnt/w" bs=100000 count=$((N / 100000)) 2>/dev/null
want "files open after the close" "$(json 'len(m["files"])')" 0
want "requests write_bytes" "$(json 'm["requests"]["write_bytes"]')" $N
want "requests writes" "$(json 'm["requests"]["writes"] >= 30')" True
want "cache write_bytes" "$(json 'm["total"]["front"]["write_bytes"]')" $N
want "storage write_bytes" "$(json 'm["total"]["back"]["write_bytes"] >= '$N)" True
want "devices closed or idle" \
	"$(json 'm["total"]["devices_closed"] + m["total"]["devices_idle"] >= 1')" True
want "source" "$(json 'm["source"]')" "$src"
want "mountpoint" "$(json 'm["mountpoint"]')" "$mnt"
# a mount point given relative is named absolute, as the daemon has it
(cd "$tmp" && "$CLIO" stat --json mnt) >"$tmp/reljson" || fail "clio stat --json mnt"
want "mountpoint given as mnt" \
	"$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["mounts"][0]["mountpoint"])' "$tmp/reljson")" "$mnt"
# O_DIRECT: the kernel keeps the pages of a file that did not change
# behind the mount's back, and this read is to reach clio
dd if="$mnt/w" of=/dev/null bs=100000 iflag=direct 2>/dev/null
want "requests read_bytes" "$(json 'm["requests"]["read_bytes"]')" $N
want "cache read_bytes" "$(json 'm["total"]["front"]["read_bytes"]')" $N
want "w_await measured" "$(json 'm["requests_iostat"]["w_await_ms"] > 0')" True
want "storage write time measured" "$(json 'm["total"]["back"]["write_time_s"] > 0')" True
want "cache read time measured" "$(json 'm["total"]["front"]["read_time_s"] > 0')" True

# the summary: the same totals, human-sized
"$CLIO" stat "$mnt" >"$tmp/sum" || fail "clio stat exits $?"
cat "$tmp/sum" >&2
head -n 1 "$tmp/sum" | grep -qF "$mnt: clio mount of $src" || fail "summary head: $(head -n 1 "$tmp/sum")"
grep -q '^  requests  reads [0-9]* (2\.9 MiB), writes [0-9]* (2\.9 MiB)' "$tmp/sum" ||
	fail "summary requests: $(grep requests "$tmp/sum")"
grep -q '^  open files: 0$' "$tmp/sum" || fail "summary: open files"

# --raw: the control file's lines
"$CLIO" stat --raw "$mnt" >"$tmp/raw" || fail "clio stat --raw exits $?"
grep -q "^total_front_write_bytes: $N\$" "$tmp/raw" || fail "--raw: $(head -n 40 "$tmp/raw")"

# an open file: one line, its path and its source file
exec 3<"$mnt/w"
"$CLIO" stat "$mnt" >"$tmp/open"
"$CLIO" stat --json "$mnt" >"$tmp/openjson"
exec 3<&-
grep -q '^  open files: 1$' "$tmp/open" || fail "open files: $(cat "$tmp/open")"
grep -q "^    w .* $src/w\$" "$tmp/open" || fail "the open file's line: $(cat "$tmp/open")"
grep -q /proc/self "$tmp/open" "$tmp/openjson" && fail "a device shown as /proc/self/fd"
python3 -c 'import json, sys
f = json.load(open(sys.argv[1]))["mounts"][0]["files"]
assert len(f) == 1 and f[0]["name"] == "w" and f[0]["device"] == sys.argv[2], f' \
	"$tmp/openjson" "$src/w" || fail "--json of the open file"
echo "ok: the open file"

# -i: COUNT reports; the first covers the time since the mount
"$CLIO" stat -i 0.2 -c 3 "$mnt" >"$tmp/bsd" || fail "clio stat -i exits $?"
cat "$tmp/bsd" >&2
[ "$(wc -l <"$tmp/bsd")" -eq 5 ] || fail "-i 0.2 -c 3: $(wc -l <"$tmp/bsd") lines, want 2 + 3"
grep -q 'KB/t *tps *MB/s *KB/t *tps *MB/s' "$tmp/bsd" || fail "-i: the BSD header"
# MB/s of the requests times the time: what they moved (read and written)
awk -v n=$N 'NR == 3 { got = $4 * $1 * 1048576; exit !(got > 1.9 * n && got < 2.1 * n) }' \
	"$tmp/bsd" || fail "-i: the first report does not cover the mount's $N + $N bytes"
"$CLIO" stat -x -i 0.2 -c 2 "$mnt" >"$tmp/x" || fail "clio stat -x -i exits $?"
cat "$tmp/x" >&2
[ "$(grep -c '^Device .*r/s .*w/s .*rkB/s .*wkB/s .*r_await .*w_await .*aqu-sz .*%util' "$tmp/x")" -eq 2 ] ||
	fail "-x: want 2 headers"
grep -q ' s  *1/s  *1/s  *kB/s  *kB/s  *kB  *kB  *ms  *ms ' "$tmp/x" || fail "-x: the units"
awk -v n=$N '/^[0-9.]+ s / && !t { t = $1 } / requests / && !done { done = 1
	got = $5 * t * 1024; exit !(got > 0.95 * n && got < 1.05 * n) }' "$tmp/x" ||
	fail "-x: wkB/s of the first report does not cover $N bytes"
echo "ok: -i"
mount_stop "$mnt"

# two mount points alike but far from their end stay distinct
long=samesamesamesamesamesamesamesame
mkdir -p "$tmp/a/$long/m" "$tmp/b/$long/m"
mount_start "$src" "$tmp/a/$long/m"
pid_a=$mount_pid
mount_start "$src" "$tmp/b/$long/m"
"$CLIO" stat -x -i 1 -c 1 "$tmp/a/$long/m" "$tmp/b/$long/m" >"$tmp/two" || fail "two mounts"
cat "$tmp/two" >&2
awk '/ requests / { print $1 }' "$tmp/two" | sort -u | wc -l >"$tmp/n"
[ "$(cat "$tmp/n")" -eq 2 ] || fail "two mounts shortened alike: $(cat "$tmp/two")"
awk '/ requests / { print $1 }' "$tmp/two" | while read -r shown; do
	tail=${shown#...}
	case "$tmp/a/$long/m $tmp/b/$long/m" in
	*"$tail"*) ;;
	*) fail "row $shown is no tail of a mount point";;
	esac
done
mount_stop "$tmp/b/$long/m"
mount_pid=$pid_a
mount_stop "$tmp/a/$long/m"
src=$tmp/src mnt=$tmp/mnt	# mount_start set them
echo "ok: names shortened from the left stay distinct"

# a device shown as given: a relative image path
head -c 1M /dev/zero >"$tmp/img.bin"
(cd "$tmp" && "$CLIO" mount img.bin mnt) || fail "clio mount img.bin mnt"
mounted="$mounted $mnt"
json 'm["source"]' >"$tmp/v"
[ "$(cat "$tmp/v")" = img.bin ] || fail "source of a relative image: $(cat "$tmp/v")"
exec 3<"$mnt/disk"
"$CLIO" stat "$mnt" >"$tmp/disk"
exec 3<&-
grep -q '^    disk .* img\.bin$' "$tmp/disk" || fail "the disk's device: $(cat "$tmp/disk")"
"$CLIO" umount "$mnt"
echo "ok: a device as given"

# clio dd: the run's -x figures after the BSD ones
"$CLIO" dd if=/dev/zero of=sim:preset=ssd,size=8M bs=64k count=128 conv=fsync 2>"$tmp/dd" ||
	fail "clio dd: $(cat "$tmp/dd")"
el=$(sed -n 's/.* copied, \([0-9.e+-]*\) s, .*/\1/p' "$tmp/dd")
grep -q '^clock: virtual' "$tmp/dd" || fail "clio dd: no virtual clock line: $(cat "$tmp/dd")"
wkbs=$(sed -n 's/^sim:preset=ssd,size=8M: r\/s .*wkB\/s \([0-9.]*\),.*/\1/p' "$tmp/dd")
awk -v e="$el" -v w="$wkbs" 'BEGIN { exit !(w * e > 8192 * 0.98 && w * e < 8192 * 1.02) }' ||
	fail "clio dd: wkB/s $wkbs over $el s is not 8192 kB: $(cat "$tmp/dd")"
echo "ok: clio dd's summary"

# --help, bad arguments
"$CLIO" stat --help >"$tmp/help" || fail "clio stat --help exits $?"
grep -q '^usage: clio stat' "$tmp/help" || fail "clio stat --help: $(cat "$tmp/help")"
for bad in "-i 0" "-i x" "-c 2" "-x" "--json -i 1" "--raw -i 1" "--json --raw" "-q"; do
	rc=0
	"$CLIO" stat $bad "$tmp" >/dev/null 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 64 ] || fail "clio stat $bad: exit $rc, want 64"
done
echo "ok: --help and bad arguments"
exit 0
