#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-dd-combos.sh - clio dd against GNU dd 9.1 byte for byte
# (tests/dd-compare.sh) on operand combinations beyond test-dd-gnu.sh's
# table: skip= and seek= with ibs != obs, conv=sparse with
# oflag=seek_bytes, count=0 with the other operands, iflag=fullblock from
# a pipe with ibs != obs, of= an existing directory, /dev/stdin,
# /dev/stdout and "-" operands (a file named -), a full output with
# gathered obs blocks ("writing to"), seek= in bytes of one obs block
# (below one, clio(1) lists the difference), conv=excl on a character
# device, iflag=direct on /dev/zero, a sparse end on standard output
# (extended, never shortened), oflag=direct on standard output with a
# short last block (O_DIRECT off, then an fsync, which a pipe
# refuses), count=0 with nocache on a pipe (GNU cannot drop its cache),
# skip= before seek= (the warning, and what is left of a piped input,
# when the seek fails), a failed conv=fsync after an error GNU dd quits
# on (no summary), an output that its user may write but not read; then
# status=progress on a copy of
# about two seconds: GNU's progress lines, each rewritten with a
# carriage return, in whole seconds, then the summary; with --iostat, the
# progress line ends before each interval's line.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/dd-compare.sh"
cd "$tmp" || fail "cd $tmp"

compare_rows <<'ROWS'
old if=@IN@ of=@OUT@ ibs=1000 obs=3000 skip=3 seek=2 count=5
old if=@IN@ of=@OUT@ ibs=3000 obs=1000 skip=3 seek=2 count=5
old if=@IN@ of=@OUT@ ibs=3000 obs=1000 skip=3 seek=2 conv=notrunc
old if=@IN@ of=@OUT@ ibs=1000 obs=512 seek=3 skip=2 count=7 oflag=seek_bytes iflag=skip_bytes conv=notrunc
old if=@IN@ of=@OUT@ ibs=1000 obs=512 seek=515 skip=2 count=7 oflag=seek_bytes iflag=skip_bytes
new if=@ZEROS@ of=@OUT@ bs=1000 seek=3000 oflag=seek_bytes conv=sparse
old if=@ZEROS@ of=@OUT@ bs=1000 seek=3001 oflag=seek_bytes conv=sparse,notrunc
new if=@ZEROS@ of=@OUT@ ibs=700 obs=1000 seek=333 oflag=seek_bytes conv=sparse
new if=@ZEROS@ of=@OUT@ ibs=700 obs=1000 seek=40000 oflag=seek_bytes conv=sparse
old if=@IN@ of=@OUT@ bs=512 seek=512B count=1
old if=@IN@ of=@OUT@ ibs=100 obs=1000 seek=1000 oflag=seek_bytes count=3
old if=@IN@ of=@OUT@ bs=512 seek=3B count=1 conv=notrunc
new if=@IN@ of=@OUT@ count=0
old if=@IN@ of=@OUT@ count=0
old if=@IN@ of=@OUT@ count=0 seek=7
old if=@IN@ of=@OUT@ count=0 conv=notrunc
old if=@IN@ of=@OUT@ count=0 skip=500
new if=@IN@ of=@OUT@ bs=4k count=0 status=progress
old if=@IN@ of=@OUT@ seek=1 conv=sparse,notrunc bs=1000 count=0
pipe of=@OUT@ count=0
new if=@IN@ of=@DIR@
new if=@IN@ of=@DIR@/
pipe of=@OUT@ bs=3000 iflag=fullblock count=5
pipe of=@OUT@ ibs=3000 obs=700 iflag=fullblock
pipe of=@OUT@ bs=3000 iflag=fullblock skip=2 count=3
pipe of=@OUT@ bs=1000 count=3 iflag=count_bytes,fullblock
new if=/dev/stdin of=@OUT@ bs=1000
pipe if=/dev/stdin of=@OUT@ bs=1024
pipe if=/dev/stdin of=@OUT@ bs=1000 skip=3 iflag=fullblock
stdout if=@IN@ of=/dev/stdout bs=1000 seek=3 count=2
stdout if=@IN@ of=/dev/stdout bs=1000 count=2 conv=notrunc
stdout if=@IN@ bs=1000 count=2 of=-
pipe if=- of=@OUT@ bs=1024 count=2
stdin if=/dev/stdin of=@OUT@ bs=1000 skip=3 count=4
stdin of=@OUT@ ibs=1000 obs=3000 skip=3 count=7
pipeout if=@IN@ of=/dev/stdout bs=1000 count=3
pipeout if=@IN@ of=/dev/stdout ibs=1000 obs=1500 count=3
new if=@IN@ of=/dev/full ibs=3000 obs=1000 count=3
new if=@IN@ of=/dev/full ibs=1000 obs=3000 count=2
new if=@IN@ of=/dev/full bs=1000 count=2 conv=ucase
new if=@IN@ of=/dev/null conv=excl
new if=/dev/zero of=@OUT@ count=1 iflag=direct
stdout if=/dev/zero bs=1K count=3 iflag=count_bytes conv=notrunc,sparse
stdout if=@ZEROS@ bs=1000 skip=6 count=2 conv=sparse
stdout if=@IN@ bs=512 count=3 iflag=count_bytes oflag=direct
pipeout if=@IN@ bs=512 count=3 iflag=count_bytes oflag=direct
pipe of=@OUT@ count=0 iflag=nocache
pipeout if=@IN@ count=0 oflag=nocache
pipeout if=@IN@ skip=1000 seek=1 count=1
pipeout if=@IN@ count=1 seek=3 conv=fsync
new if=@IN@ of=/dev/full ibs=3000 obs=1000 count=3 conv=fdatasync
ROWS
rm -f "$tmp/-"

# GNU dd skips the input before it seeks the output: a failed seek on a
# pipe still took the skipped block from the input
left=$(head -c 2000 "$tmp/in" | { "$CLIO" dd skip=1 seek=1 count=1 2>/dev/null | cat >/dev/null; wc -c; })
[ "$left" -eq 1488 ] || fail "skip=1 seek=1 onto a pipe: $left bytes left of 2000, not 1488"
echo "ok: skip=1 seek=1 onto a pipe: 1488 bytes left of the input"

# status=progress on a copy of about 2.3 s: a line at each second
# rewritten in place (a carriage return first), whole seconds, as GNU's
{ head -c 50000 "$tmp/in"; sleep 1.15; head -c 50000 "$tmp/in"; sleep 1.15; head -c 1000 "$tmp/in"; } |
	"$CLIO" dd of="$tmp/pout" bs=1000 iflag=fullblock status=progress 2>"$tmp/perr" ||
	fail "status=progress: clio dd failed: $(cat "$tmp/perr")"
tr '\r' '\n' <"$tmp/perr" | sed -n '1,/records in/p' | grep -v 'records in' | sed '/^$/d' >"$tmp/plines"
[ "$(wc -l <"$tmp/plines")" -ge 2 ] || { od -c "$tmp/perr" | head; fail "status=progress: fewer than 2 progress lines"; }
grep -vqE '^[0-9]+ bytes (\([0-9.]+ [kMG]B, [0-9.]+ [KMG]iB\) )?copied, [0-9]+ s, [0-9.]+ [kMG]?B/s *$' "$tmp/plines" &&
	{ cat "$tmp/plines"; fail "status=progress: a line not in GNU's form"; }
[ "$(head -c 1 "$tmp/perr" | od -An -c | tr -d ' ')" = '\r' ] || fail "status=progress: the first line starts with no carriage return"
grep -q '^101+0 records in$' "$tmp/perr" && grep -q '^101000 bytes (101 kB, 99 KiB) copied, ' "$tmp/perr" ||
	{ cat "$tmp/perr"; fail "status=progress: the summary"; }
head -c 50000 "$tmp/in" >"$tmp/pwant"; head -c 50000 "$tmp/in" >>"$tmp/pwant"; head -c 1000 "$tmp/in" >>"$tmp/pwant"
cmp -s "$tmp/pout" "$tmp/pwant" || fail "status=progress: the copy differs"
echo "ok: status=progress: $(wc -l <"$tmp/plines") progress lines in GNU's form, then the summary"
# with --iostat too: a progress line ends before an interval's line, which
# starts a line of its own, and no empty line comes before the summary
{ head -c 50000 "$tmp/in"; sleep 1.15; head -c 50000 "$tmp/in"; sleep 0.6; head -c 1000 "$tmp/in"; } |
	"$CLIO" dd of=mem:size=1M bs=1000 iflag=fullblock status=progress --iostat=0.5 2>"$tmp/perr" ||
	fail "status=progress --iostat: clio dd failed: $(cat "$tmp/perr")"
grep -q 'copied, [0-9]* s, [0-9.]* [kMG]*B/s  *[0-9]' "$tmp/perr" &&
	{ cat -A "$tmp/perr" | head; fail "status=progress --iostat: an interval line after a progress line"; }
grep -q "$(printf '\r')" "$tmp/perr" || fail "status=progress --iostat: no progress line"
sed -n '1,/records in/p' "$tmp/perr" | grep -q '^$' &&
	{ cat -A "$tmp/perr" | head; fail "status=progress --iostat: an empty line"; }
echo "ok: status=progress with --iostat: each line whole"
# An output its user may write but not read (mode 0200): GNU dd writes
# it through a write-only descriptor, truncated at seek=
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	mkdir "$tmp/wo"
	chmod 755 "$tmp"
	chmod 777 "$tmp/wo"
	for args in "bs=1000 count=2 seek=1 conv=notrunc" "bs=1000 count=2 seek=3" \
		"bs=1000 seek=3 conv=sparse" "ibs=700 obs=3000 count=9 seek=2"; do
		for who in g c; do
			if [ $who = g ]; then prog=$GNU; else prog="$CLIO dd"; fi
			cp "$tmp/old" "$tmp/wo/${who}out"
			chown 65534 "$tmp/wo/${who}out"
			chmod 200 "$tmp/wo/${who}out"
			# shellcheck disable=SC2086
			setpriv --reuid=65534 --regid=65534 --clear-groups $prog if="$tmp/zeros" \
				of="$tmp/wo/${who}out" $args 2>"$tmp/${who}err" ||
				fail "write-only output, $args: $who failed: $(cat "$tmp/${who}err")"
		done
		cmp "$tmp/wo/gout" "$tmp/wo/cout" || fail "write-only output, $args: the outputs differ"
		echo "ok: write-only output, $args"
	done
fi
echo "ok: $rows rows"
exit 0
