#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-dev.sh - the nfs:// device against NFS-Ganesha (NFSv3, the VFS
# backend) in the test's own namespace, through tests/tools/rpcproxy:
# clio dd writes and reads seeded unaligned offsets and sizes, and the
# export's file on disk equals a model written by GNU dd, byte for byte
# (writes past the end grow the file, a dd without notrunc truncates it:
# SETATTR; a missing file is created, mode 0644 less the umask, but not
# with conv=nocreat, an existing one not opened with conv=excl; a
# subdirectory's file read; %3F %26 %25 in the path name ? & %); if=
# and of= one file named by two device strings: emptied, as GNU dd does;
# clio info shows the server's rtmax and wtmax and maxio is
# their minimum; 4 KiB writes reach the server as WRITE RPCs of the
# cluster size, counted by the proxy, and fsync is a COMMIT; keep=
# bounds what is uncommitted (COMMITs on the way); a bad URL, a missing
# file and an unreachable server are one-line errors naming the device;
# the proxy's delay shows in the time the calls take.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"

seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
fail() { echo "FAIL: $* (SEED=$seed)" >&2; exit 1; }
echo "seed $seed"

ganesha_start
proxy_start 0
url="nfs://127.0.0.1$export/f?$pq"

# ------------------------------------------------------------ round trips
head -c 1500007 /dev/urandom >"$export/f"
cp "$export/f" "$tmp/model"
# ten round trips; four under TSan, where each small clio dd block is slow
trips=10
[ "${CLIO_FLAVOUR:-}" = tsan ] && trips=4
awk -v s="$seed" -v n="$trips" 'BEGIN { srand(s); for (i = 0; i < n; i++)
	printf "%d %d %d %d %d\n", int(rand() * 2000000), 1 + int(rand() * 300000),
	       1 + int(rand() * 70000), int(rand() * 2100000), 1 + int(rand() * 400000) }' \
	>"$tmp/plan"
n=0
while read -r off len bs roff rlen; do
	n=$((n + 1))
	head -c "$len" /dev/urandom >"$tmp/piece"
	conv=notrunc
	[ $((n % 2)) -eq 0 ] && conv=notrunc,fsync
	"$CLIO" dd if="$tmp/piece" of="$url" bs="$bs" oflag=seek_bytes seek="$off" \
		conv=$conv status=none 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "clio dd of=nfs:// at $off, $len bytes, bs=$bs"; }
	dd if="$tmp/piece" of="$tmp/model" bs="$bs" oflag=seek_bytes seek="$off" \
		conv=notrunc status=none
	cmp "$tmp/model" "$export/f" || fail "write $n ($len bytes at $off, bs=$bs): the export's file differs"
	"$CLIO" dd if="$url" of="$tmp/rb" bs="$bs" iflag=skip_bytes,count_bytes \
		skip="$roff" count="$rlen" status=none 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "clio dd if=nfs:// at $roff, $rlen bytes"; }
	dd if="$tmp/model" of="$tmp/rbm" bs="$bs" iflag=skip_bytes,count_bytes \
		skip="$roff" count="$rlen" status=none
	cmp "$tmp/rb" "$tmp/rbm" || fail "read $n ($rlen bytes at $roff, bs=$bs) differs"
done <"$tmp/plan"
echo "ok: $n unaligned writes and reads through nfs://, byte for byte ($(stat -c %s "$export/f") bytes)"

# a dd without notrunc truncates at its seek offset (SETATTR size)
head -c 5000 /dev/urandom >"$tmp/piece"
"$CLIO" dd if="$tmp/piece" of="$url" bs=999 oflag=seek_bytes seek=700001 status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd with truncation"; }
dd if="$tmp/piece" of="$tmp/model" bs=999 oflag=seek_bytes seek=700001 status=none
[ "$(stat -c %s "$export/f")" -eq 705001 ] || fail "truncated to $(stat -c %s "$export/f"), not 705001"
cmp "$tmp/model" "$export/f" || fail "after the truncation the file differs"
echo "ok: truncated and written: 705001 bytes, as GNU dd"

# a missing file is created (clio dd of=), a file in a subdirectory read
head -c 100000 /dev/urandom >"$tmp/small"
"$CLIO" dd if="$tmp/small" of="nfs://127.0.0.1$export/new?$pq" bs=7k status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd of= a new file"; }
cmp "$tmp/small" "$export/new" || fail "the created file differs"
mkdir "$export/sub" && cp "$tmp/small" "$export/sub/g"
"$CLIO" dd if="nfs://127.0.0.1$export/sub/g?$pq" of="$tmp/g" bs=5k status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd if= a file in a subdirectory"; }
cmp "$tmp/small" "$tmp/g" || fail "the file in a subdirectory reads back otherwise"
echo "ok: a missing file created, a file in a subdirectory read"

# a created file's mode is 0644 less the umask, as the file backend's; an
# existing file keeps its own
for um in 077 027 000; do
	(umask $um && "$CLIO" dd if="$tmp/small" of="nfs://127.0.0.1$export/um$um?$pq" \
		status=none) 2>"$tmp/err" || { cat "$tmp/err"; fail "clio dd with umask $um"; }
	want=$(printf '%o' $((0644 & ~0$um)))
	got=$(stat -c %a "$export/um$um")
	[ "$got" = "$want" ] || fail "umask $um: created with mode $got, not $want"
done
chmod 0600 "$export/um000"
(umask 000 && "$CLIO" dd if="$tmp/small" of="nfs://127.0.0.1$export/um000?$pq" \
	conv=notrunc status=none) 2>"$tmp/err" || { cat "$tmp/err"; fail "clio dd onto a 0600 file"; }
[ "$(stat -c %a "$export/um000")" = 600 ] || fail "an existing file's mode changed to $(stat -c %a "$export/um000")"
echo "ok: created with 0644 less the umask (077, 027, 000), an existing file's mode kept"

# the path's %XX are decoded: %3F %26 %25 name a ? & % of the file's name
"$CLIO" dd if="$tmp/small" of="nfs://127.0.0.1$export/q%3Fa%26b%25c?$pq" status=none \
	2>"$tmp/err" || { cat "$tmp/err"; fail "clio dd to q%3Fa%26b%25c"; }
cmp "$tmp/small" "$export/q?a&b%c" || fail "q%3Fa%26b%25c did not write 'q?a&b%c'"
"$CLIO" dd if="nfs://127.0.0.1$export/q%3Fa%26b%25c?$pq" of="$tmp/back" status=none ||
	fail "clio dd from q%3Fa%26b%25c"
cmp "$tmp/small" "$tmp/back" || fail "q%3Fa%26b%25c reads back different"
echo "ok: %3F %26 %25 in the path name a ? & % of the file"

# conv=nocreat does not create a missing file, conv=excl does not open an
# existing one (its bytes stay) and creates a missing one, as GNU dd
if "$CLIO" dd if="$tmp/small" of="nfs://127.0.0.1$export/none?$pq" conv=nocreat \
	status=none 2>"$tmp/err"; then fail "conv=nocreat: a missing file written"; fi
[ ! -e "$export/none" ] || fail "conv=nocreat created the file"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "conv=nocreat: not one line"; }
cp "$export/new" "$tmp/new"
head -c 3000 /dev/urandom >"$tmp/other"
if "$CLIO" dd if="$tmp/other" of="nfs://127.0.0.1$export/new?$pq" conv=excl \
	status=none 2>"$tmp/err"; then fail "conv=excl: an existing file written"; fi
grep -q "File exists\|EXIST" "$tmp/err" || { cat "$tmp/err"; fail "conv=excl: not EEXIST"; }
cmp "$tmp/new" "$export/new" || fail "conv=excl changed the existing file"
"$CLIO" dd if="$tmp/other" of="nfs://127.0.0.1$export/excl?$pq" conv=excl status=none \
	2>"$tmp/err" || { cat "$tmp/err"; fail "conv=excl: a missing file not created"; }
cmp "$tmp/other" "$export/excl" || fail "conv=excl: the created file differs"
echo "ok: conv=nocreat and conv=excl as GNU dd's"

# ------------------------------------------------------------ clio info
"$CLIO" info "$url" >"$tmp/info" 2>&1 || { cat "$tmp/info"; fail "clio info $url"; }
rtmax=$(sed -n 's/^ *rtmax=//p' "$tmp/info")
wtmax=$(sed -n 's/^ *wtmax=//p' "$tmp/info")
maxio=$(sed -n 's/^maxio: *\([0-9]*\).*/\1/p' "$tmp/info")
[ -n "$rtmax" ] && [ -n "$wtmax" ] || { cat "$tmp/info"; fail "clio info shows no rtmax/wtmax"; }
[ "$maxio" -eq "$([ "$rtmax" -lt "$wtmax" ] && echo "$rtmax" || echo "$wtmax")" ] ||
	fail "maxio $maxio is not min(rtmax $rtmax, wtmax $wtmax)"
grep -q "^size: *705001 " "$tmp/info" || { cat "$tmp/info"; fail "clio info: not the file's size"; }
echo "ok: clio info: rtmax=$rtmax wtmax=$wtmax maxio=$maxio"
# the file's version from GETATTR: what stat(1) says of the export's file
want="$(stat -c '%s %i %.9Y %.9Z' "$export/f")"
got="$(sed -n 's/^ *attr_\(size\|fileid\|mtime\|ctime\)=//p' "$tmp/info" | tr '\n' ' ' | sed 's/ $//')"
[ "$got" = "$want" ] || fail "GETATTR: size fileid mtime ctime '$got', stat says '$want'"
echo "ok: GETATTR: size fileid mtime ctime $got"

# ------------------------------------------------------------ clustering
# 2 MiB in 4 KiB writes with 256 KiB clusters: 8 WRITE RPCs, 1 COMMIT
head -c 2097152 /dev/urandom >"$tmp/two"
proxy_counts "$tmp/c0"
"$CLIO" dd if="$tmp/two" of="$url" bs=4k conv=notrunc,fsync --maxphys=256k status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd bs=4k"; }
proxy_counts "$tmp/c1"
cmp "$tmp/two" "$export/f" || fail "the 4 KiB writes differ on the server"
w=$(( $(rpc_calls "$tmp/c1" nfs3 WRITE) - $(rpc_calls "$tmp/c0" nfs3 WRITE) ))
b=$(( $(rpc_bytes "$tmp/c1" nfs3 WRITE) - $(rpc_bytes "$tmp/c0" nfs3 WRITE) ))
cm=$(( $(rpc_calls "$tmp/c1" nfs3 COMMIT) - $(rpc_calls "$tmp/c0" nfs3 COMMIT) ))
[ "$w" -eq 8 ] || { cat "$tmp/c1"; fail "$w WRITE RPCs for 2 MiB in 256 KiB clusters, not 8"; }
[ $((b / w)) -ge 262144 ] || fail "WRITE RPCs of $((b / w)) bytes, not 256 KiB"
[ "$cm" -ge 1 ] || fail "fsync sent no COMMIT"
echo "ok: 512 writes of 4 KiB became $w WRITE RPCs of $((b / w)) bytes and $cm COMMIT"

# keep=: at most 1 MiB uncommitted or in flight (wtmax): 4 MiB written
# with 16 clusters of 256 KiB in flight at most send COMMITs on the way,
# not one at the end
head -c 4194304 /dev/urandom >"$tmp/four"
proxy_counts "$tmp/c0"
"$CLIO" dd if="$tmp/four" of="$url&keep=1M" bs=64k conv=notrunc,fsync --maxphys=256k \
	--queue-depth=16 status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd with keep=1M"; }
proxy_counts "$tmp/c1"
cmp "$tmp/four" "$export/f" || fail "keep=1M: the file differs"
cm=$(( $(rpc_calls "$tmp/c1" nfs3 COMMIT) - $(rpc_calls "$tmp/c0" nfs3 COMMIT) ))
[ "$cm" -ge 3 ] || { cat "$tmp/c1"; fail "keep=1M: $cm COMMITs for 4 MiB, not at least 3"; }
echo "ok: keep=1M: 4 MiB written with $cm COMMITs"

# ------------------------------------------------------------ one file, both ends
# if= and of= the same file, named by two device strings (or by the
# export's path and a URL): without conv=notrunc the copy's reads see the
# truncation, as GNU dd's do: the file ends empty (it ended as zeros of
# the old size less skip=, the input device reading past the server's end)
u="nfs://127.0.0.1$export/same?$pq"
for pair in "$u $u" "$export/same $u" "$u file:$export/same"; do
	head -c 300000 /dev/urandom >"$export/same"
	"$CLIO" dd if="${pair% *}" of="${pair#* }" bs=64k skip=1 status=none 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "clio dd if= of= the same file ($pair)"; }
	[ ! -s "$export/same" ] ||
		fail "if= of= one file ($pair) left $(wc -c <"$export/same") bytes, not an empty file"
done
echo "ok: if= and of= one file through two device strings: emptied, as GNU dd"

# ------------------------------------------------------------ errors
one_line() { # WHAT DEVICE: clio info fails with one line naming DEVICE
	if "$CLIO" info "$2" >"$tmp/out" 2>"$tmp/err"; then fail "$1: clio info succeeded"; fi
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "$1: not one line"; }
	grep -qF "$2" "$tmp/err" || { cat "$tmp/err"; fail "$1: the error does not name '$2'"; }
	echo "ok: $1: $(cat "$tmp/err")"
}
one_line "bad URL" "nfs://"
one_line "no file name" "nfs://127.0.0.1"
one_line "missing file" "nfs://127.0.0.1$export/nope?$pq"
one_line "not exported" "nfs://127.0.0.1/nowhere/f?$pq"
one_line "unreachable server" "nfs://127.0.0.1$export/f?port=9&mountport=9"
one_line "bad qd" "nfs://127.0.0.1$export/f?qd=0"

# ------------------------------------------------------------ latency
# the proxy delays each direction 25 ms: opening the device, one call
# after the other, takes at least 50 ms a call
proxy_stop
proxy_start 25
t0=$(date +%s%N)
"$CLIO" info "$url" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "clio info through a 50 ms RTT"; }
t1=$(date +%s%N)
proxy_counts "$tmp/c2"
calls=$(awk '{ n += $3 } END { print n }' "$tmp/c2")
ms=$(( (t1 - t0) / 1000000 ))
[ "$calls" -ge 5 ] || { cat "$tmp/c2"; fail "only $calls calls to open the device"; }
[ "$ms" -ge $((calls * 50 * 9 / 10)) ] || fail "$calls calls in $ms ms through a 50 ms round trip"
echo "ok: 50 ms round trips: $calls calls to open and close, $ms ms"
exit 0
