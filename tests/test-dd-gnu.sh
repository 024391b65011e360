#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-dd-gnu.sh - clio dd against GNU dd 9.1, byte for byte: for every
# row of the table below, both run with the same operands on the same
# input and the same old output file; the output files must be equal and
# so must standard error, once the program names ("dd:", "clio dd:"), the
# times and rates of the transfer line, GNU's "Try ... --help" line and
# clio's own lines (device and cache statistics) are masked; both exit 0
# or both do not.  The rows cover every operand, conversion, flag and
# status level GNU dd 9.1 documents, and its error and warning cases.
# Under ASan every other row runs (the plain run has them all).
# Skipped (77) where no GNU dd 9.x is installed.
set -e
. "$(dirname "$0")/functions.sh"

GNU=${GNU_DD:-dd}
"$GNU" --version 2>/dev/null | head -n 1 | grep -q 'coreutils. 9\.' || {
	echo "no GNU dd 9 to compare with"
	exit 77
}
export LC_ALL=C

# inputs: binary, text lines for block/unblock, zeros for sparse
head -c 100000 /dev/urandom >"$tmp/in"
awk 'BEGIN { for (i = 0; i < 300; i++) {
	s = ""; for (j = 0; j < (i * 7) % 23; j++) s = s sprintf("%c", 97 + (i + j) % 26)
	if (i % 5 == 0) s = s "   "; if (i % 7 == 0) s = "  " s; print s } }' >"$tmp/txt"
printf 'tail without newline' >>"$tmp/txt"
{ head -c 5000 "$tmp/in"; head -c 20000 /dev/zero; head -c 3000 "$tmp/in";
  head -c 8192 /dev/zero; } >"$tmp/zeros"
head -c 30000 /dev/urandom >"$tmp/old"
head -c 1000 /dev/urandom >"$tmp/short"
mkdir "$tmp/dir"
cp "$tmp/short" "$tmp/dir/it's"
cp "$tmp/short" "$tmp/dir/a=b"
cp "$tmp/short" "$tmp/dir/a:b"
ln -s "$tmp/in" "$tmp/link"
ln -s "$tmp/dir" "$tmp/dlink"
mkfifo "$tmp/fifo"

norm() { # stderr of either program, masked
	sed -e 's/^\(clio \)\{0,1\}[^ ]*dd: /dd: /' \
	    -e 's/\(copied\), .*/\1, T s, R/' \
	    -e "/^Try '.*--help' for more information\.$/d" \
	    -e '/^[^ ]*: [0-9]* reads, [0-9]* writes, /d' \
	    -e '/^[^ ]*: r\/s [0-9.]*, w\/s /d' \
	    -e '/^cache: [0-9]* hits/d' -e '/^clock: /d' \
	    -e "s|$tmp/[a-z]*out|OUT|g" "$1"
}

n=0
# row PRE ARGS...: PRE is old (the output starts as a copy of old), new
# (no output file yet), short (a copy of short), stdin (the input on
# standard input, a file), pipe (the input through a pipe), stdout
# (the output on standard output, redirected to the file), pipeout (the
# output on standard output, a pipe into the file).
# In ARGS, @IN@ @TXT@ @ZEROS@ @DIR@ @LINK@ (to in) @DLINK@ (to dir) @SHORT@
# name inputs, @OUT@ the output.
row() {
	pre=$1
	shift
	args="$*"
	n=$((n + 1))
	# under ASan every other row: the rows are many, each a clio that
	# starts slowly there, and the plain run has them all
	[ "${CLIO_FLAVOUR:-plain}" != asan ] || [ $((n % 2)) -eq 1 ] || return 0
	for who in g c; do
		out="$tmp/${who}out"
		rm -f "$out"
		case $pre in
		old|stdin|pipe|stdout) cp "$tmp/old" "$out";;
		short) cp "$tmp/short" "$out";;
		esac
		# shellcheck disable=SC2086
		set -- $(printf '%s\n' $args | sed -e "s|@IN@|$tmp/in|g" -e "s|@TXT@|$tmp/txt|g" \
			-e "s|@ZEROS@|$tmp/zeros|g" -e "s|@DIR@|$tmp/dir|g" \
			-e "s|@LINK@|$tmp/link|g" -e "s|@DLINK@|$tmp/dlink|g" \
			-e "s|@SHORT@|$tmp/short|g" \
			-e "s|@OUT@|$out|g")
		if [ $who = g ]; then prog=$GNU; else prog="$CLIO dd"; fi
		rc=0
		case $pre in
		stdin)  $prog "$@" <"$tmp/in" 2>"$tmp/${who}err" || rc=$?;;
		pipe)   cat "$tmp/in" | $prog "$@" 2>"$tmp/${who}err" || rc=$?;;
		stdout) $prog "$@" 2>"$tmp/${who}err" 1<>"$out" || rc=$?;;
		pipeout) { $prog "$@" 2>"$tmp/${who}err" || echo $? >"$tmp/rc"; } | cat >"$out"
			[ ! -e "$tmp/rc" ] || rc=$(cat "$tmp/rc"); rm -f "$tmp/rc";;
		*)      $prog "$@" 2>"$tmp/${who}err" </dev/null || rc=$?;;
		esac
		eval "${who}rc=$rc"
	done
	set -- $args
	what="row $n ($pre $*)"
	if [ -e "$tmp/gout" ] || [ -e "$tmp/cout" ]; then
		cmp -s "$tmp/gout" "$tmp/cout" ||
			fail "$what: the output files differ ($(wc -c <"$tmp/gout" 2>&1) / $(wc -c <"$tmp/cout" 2>&1) bytes)"
	fi
	norm "$tmp/gerr" >"$tmp/gnorm"
	norm "$tmp/cerr" >"$tmp/cnorm"
	if ! cmp -s "$tmp/gnorm" "$tmp/cnorm"; then
		diff "$tmp/gnorm" "$tmp/cnorm" | sed 's/^/    /' >&2 || true
		fail "$what: standard error differs (< GNU, > clio)"
	fi
	if [ "$grc" -eq 0 ] && [ "$crc" -ne 0 ] || [ "$grc" -ne 0 ] && [ "$crc" -eq 0 ]; then
		fail "$what: GNU dd exits $grc, clio dd $crc: $(cat "$tmp/cerr")"
	fi
	echo "ok: $what: exit $grc/$crc, $(head -n 1 "$tmp/cnorm")"
}

# The table.  One row per line: PRE, then the operands.
while read -r line; do
	case $line in ''|'#'*) continue;; esac
	# shellcheck disable=SC2086
	row $line
done <<'EOF'
# block sizes
new if=@IN@ of=@OUT@
new if=@IN@ of=@OUT@ bs=4k
new if=@IN@ of=@OUT@ bs=999999 count=1
new if=@IN@ of=@OUT@ bs=3000
new if=@IN@ of=@OUT@ ibs=3000 obs=4096
new if=@IN@ of=@OUT@ ibs=64k obs=1000
new if=@IN@ of=@OUT@ bs=2x512
new if=@IN@ of=@OUT@ bs=2x3 count=7
new if=@IN@ of=@OUT@ bs=1x2x3 count=7
new if=@IN@ of=@OUT@ bs=1kB count=3
new if=@IN@ of=@OUT@ bs=1KiB count=3
new if=@IN@ of=@OUT@ bs=2b count=3
new if=@IN@ of=@OUT@ bs=3w count=3
new if=@IN@ of=@OUT@ bs=7c count=3
new if=@IN@ of=@OUT@ bs=1M
new if=@IN@ of=@OUT@ ibs=100 bs=200 obs=300
new if=/dev/zero of=@OUT@ bs=100 count=1
new if=/dev/zero of=@OUT@ bs=1 count=1
new if=/dev/zero of=@OUT@ bs=1000 count=1
new if=/dev/zero of=@OUT@ bs=1023 count=1
new if=/dev/zero of=@OUT@ bs=1024 count=1
new if=/dev/zero of=@OUT@ bs=9999 count=1
new if=/dev/zero of=@OUT@ bs=99949 count=1
new if=/dev/zero of=@OUT@ bs=99950 count=1
new if=/dev/zero of=@OUT@ bs=999499 count=3
new if=/dev/zero of=@OUT@ bs=1048576 count=3
new if=/dev/zero of=@OUT@ bs=10238976 count=1
new if=/dev/zero of=@OUT@ count=0
# count, skip, seek and their byte forms
old if=@IN@ of=@OUT@ bs=4k count=5
old if=@IN@ of=@OUT@ bs=4k skip=3 seek=5 count=10
old if=@IN@ of=@OUT@ bs=4k iseek=3 oseek=2 count=4
old if=@IN@ of=@OUT@ bs=1000 count=2500B
old if=@IN@ of=@OUT@ bs=1000 count=2500 iflag=count_bytes
old if=@IN@ of=@OUT@ bs=1000 skip=2500B count=2
old if=@IN@ of=@OUT@ bs=1000 skip=2500 iflag=skip_bytes count=2
old if=@IN@ of=@OUT@ bs=1000 seek=2500B count=2
old if=@IN@ of=@OUT@ bs=1000 seek=2500 oflag=seek_bytes count=2
old if=@IN@ of=@OUT@ bs=1000 seek=2500 iflag=seek_bytes count=2
old if=@IN@ of=@OUT@ bs=1000 skip=2500 oflag=skip_bytes count=2
old if=@IN@ of=@OUT@ bs=4k seek=100 count=1
old if=@IN@ of=@OUT@ bs=4k seek=3 count=0
old if=@IN@ of=@OUT@ bs=4k seek=30 count=0 conv=notrunc
old if=@IN@ of=@OUT@ skip=195
old if=@IN@ of=@OUT@ skip=196
old if=@IN@ of=@OUT@ skip=1000
old if=@IN@ of=@OUT@ skip=1000 status=none
old if=@IN@ of=@OUT@ bs=1000 skip=99999B
stdin of=@OUT@ bs=1000 skip=3 count=4
stdin of=@OUT@ bs=1000 skip=1000
pipe of=@OUT@ bs=512 skip=3 count=4
pipe of=@OUT@ bs=4096 skip=30
stdout if=@IN@ bs=1000 seek=3 count=2
stdout if=@IN@ bs=1000 seek=3 count=2 conv=notrunc
# conversions
old if=@IN@ of=@OUT@ bs=4k count=10 conv=notrunc
old if=@IN@ of=@OUT@ bs=4k count=3 seek=2 conv=notrunc
new if=@TXT@ of=@OUT@ conv=ucase
new if=@TXT@ of=@OUT@ conv=lcase
new if=@TXT@ of=@OUT@ conv=ucase bs=100
new if=@IN@ of=@OUT@ conv=swab
new if=@IN@ of=@OUT@ conv=swab bs=333
new if=@IN@ of=@OUT@ conv=swab ibs=333 obs=77
new if=@TXT@ of=@OUT@ cbs=10 conv=block
new if=@TXT@ of=@OUT@ cbs=7 conv=block ibs=13 obs=5
new if=@TXT@ of=@OUT@ cbs=1 conv=block
new if=@TXT@ of=@OUT@ cbs=10 conv=unblock
new if=@TXT@ of=@OUT@ cbs=3 conv=unblock ibs=5
new if=@TXT@ of=@OUT@ conv=block
new if=@IN@ of=@OUT@ conv=ascii
new if=@IN@ of=@OUT@ conv=ebcdic
new if=@IN@ of=@OUT@ conv=ibm
new if=@TXT@ of=@OUT@ conv=ebcdic,ucase cbs=20
new if=@TXT@ of=@OUT@ conv=ibm cbs=20
new if=@TXT@ of=@OUT@ conv=ascii,lcase cbs=9
new if=@TXT@ of=@OUT@ conv=ascii,unblock cbs=9
new if=@IN@ of=@OUT@ bs=3000 conv=sync
new if=@IN@ of=@OUT@ ibs=3000 obs=1000 conv=sync
new if=@TXT@ of=@OUT@ bs=100 conv=sync,block cbs=30
new if=@IN@ of=@OUT@ bs=3000 conv=noerror
new if=@IN@ of=@OUT@ bs=3000 conv=noerror,sync
old if=@ZEROS@ of=@OUT@ bs=1000 conv=sparse
old if=@ZEROS@ of=@OUT@ bs=1000 conv=sparse,notrunc
old if=@ZEROS@ of=@OUT@ bs=4096 conv=sparse
new if=@ZEROS@ of=@OUT@ ibs=1000 obs=512 conv=sparse
new if=/dev/zero of=@OUT@ bs=1000 count=5 conv=sparse
new if=@IN@ of=@OUT@ bs=4k conv=fsync
new if=@IN@ of=@OUT@ bs=4k conv=fdatasync
new if=@IN@ of=@OUT@ bs=4k conv=excl
old if=@IN@ of=@OUT@ bs=4k conv=excl
new if=@IN@ of=@OUT@ bs=4k conv=nocreat
old if=@IN@ of=@OUT@ bs=4k conv=nocreat
new if=@IN@ of=/dev/null conv=fsync
new if=@IN@ of=/dev/null conv=fdatasync
# flags
old if=@IN@ of=@OUT@ bs=4k oflag=append
old if=@IN@ of=@OUT@ bs=4k oflag=append conv=notrunc
old if=@IN@ of=@OUT@ bs=4k count=2 seek=2 oflag=append
old if=@IN@ of=@OUT@ bs=4k iflag=append
new if=@IN@ of=@OUT@ bs=4k iflag=direct
new if=@IN@ of=@OUT@ bs=4k oflag=direct
old if=@IN@ of=@OUT@ bs=64k iflag=direct oflag=direct
new if=@IN@ of=@OUT@ bs=4k count=3 oflag=dsync
new if=@IN@ of=@OUT@ bs=4k count=3 oflag=sync
new if=@IN@ of=@OUT@ bs=4k count=3 iflag=dsync,sync
new if=@IN@ of=@OUT@ bs=4k iflag=fullblock
pipe of=@OUT@ bs=4096 iflag=fullblock
new if=@IN@ of=@OUT@ bs=4k iflag=nonblock oflag=nonblock
new if=@IN@ of=@OUT@ bs=4k iflag=noatime
new if=@IN@ of=@OUT@ bs=4k oflag=noatime
old if=@IN@ of=@OUT@ bs=1000 count=1500 oflag=count_bytes
new if=@IN@ of=@OUT@ bs=4k iflag=nocache oflag=nocache
new if=@IN@ of=@OUT@ bs=4k iflag=noctty oflag=noctty
new if=@IN@ of=@OUT@ bs=4k iflag=nofollow oflag=nofollow
new if=@LINK@ of=@OUT@ bs=4k iflag=nofollow
new if=@LINK@ of=@OUT@ bs=4k
new if=@IN@ of=@OUT@ iflag=directory
new if=@DIR@ of=@OUT@ iflag=directory
new if=@IN@ of=@OUT@ oflag=directory
new if=@IN@ of=@OUT@ oflag=fullblock
new if=@IN@ of=@OUT@ iflag=direct,nocache
new if=@IN@ of=@OUT@ oflag=direct,nocache
# status
new if=@IN@ of=@OUT@ bs=4k status=none
new if=@IN@ of=@OUT@ bs=4k status=noxfer
new if=@IN@ of=@OUT@ bs=4k status=progress
new if=@TXT@ of=@OUT@ cbs=5 conv=block status=noxfer
# more combinations
old if=@IN@ of=@OUT@ bs=4k seek=200 count=1 conv=notrunc
old if=@IN@ of=@OUT@ bs=1000 iseek=3B oseek=1005B count=2
old if=@IN@ of=@OUT@ bs=1000 count=0 skip=3
old if=@IN@ of=@OUT@ ibs=1 obs=1 count=10
new if=@TXT@ of=@OUT@ cbs=8 conv=unblock,sync ibs=100
new if=@TXT@ of=@OUT@ cbs=8 conv=block,swab,lcase obs=333
new if=@IN@ of=@OUT@ ibs=1000 obs=3000 count=7 status=progress
old if=@IN@ of=@OUT@ bs=1000 count=3000B oflag=append,seek_bytes seek=10 conv=notrunc
old if=@IN@ of=@OUT@ bs=1000 count=1500 iflag=count_bytes,skip_bytes skip=1500
stdin of=@OUT@ bs=1000 count=3 iflag=fullblock
stdin of=@OUT@ bs=4096 count=3 iflag=direct
new if=@IN@ of=@OUT@ bs=3000 count=2 status=none conv=fsync
# still more: pipes, full devices, sparse with seek, case with swab
pipe of=@OUT@ bs=512 conv=sync count=5
pipe of=@OUT@ ibs=512 obs=4096 conv=swab count=9
pipe of=@OUT@ bs=512 skip=1000B count=2
pipe of=@OUT@ bs=512 skip=3 iflag=fullblock count=2
pipe of=@OUT@ bs=1024 count=3000 iflag=count_bytes
new if=@IN@ of=/dev/full bs=4k count=2
new if=/dev/zero of=/dev/full bs=4k count=2 status=none
new if=@IN@ of=/dev/null bs=4k seek=5 count=2
old if=@ZEROS@ of=@OUT@ bs=1000 seek=3 conv=sparse
new if=@ZEROS@ of=@OUT@ bs=1000 seek=3 conv=sparse
new if=@IN@ of=@OUT@ bs=1000 count=5 oflag=append
new if=@TXT@ of=@OUT@ conv=unblock,swab cbs=6 ibs=7 obs=11
new if=@TXT@ of=@OUT@ ibs=10 obs=1M count=33 conv=ucase
new if=@IN@ of=@OUT@ ibs=1 obs=1M count=4321
new if=@TXT@ of=@OUT@ cbs=4 conv=block,sync ibs=9
stdin of=@OUT@ bs=1000 skip=50000B count=2 iflag=skip_bytes
# errors and warnings
new if=@IN@ of=@OUT@ bs=0
new if=@IN@ of=@OUT@ bs=12Q
new if=@IN@ of=@OUT@ bs=1x
new if=@IN@ of=@OUT@ bs=x1
new if=@IN@ of=@OUT@ bs=2x0
new if=@IN@ of=@OUT@ bs=-1
new if=@IN@ of=@OUT@ count=abc
new if=@IN@ of=@OUT@ count=0x5
new if=@IN@ of=@OUT@ bs=0x512
new if=@IN@ of=@OUT@ count=00x5
new if=@IN@ of=@OUT@ count=1x2B
new if=@IN@ of=@OUT@ count=99999999999999999999
new if=@IN@ of=@OUT@ bs=1Z
new if=@IN@ of=@OUT@ cbs=0
new if=@IN@ of=@OUT@ conv=bogus
new if=@IN@ of=@OUT@ conv=notrunc,bogus
new if=@IN@ of=@OUT@ iflag=bogus
new if=@IN@ of=@OUT@ oflag=direct,bogus
new if=@IN@ of=@OUT@ status=loud
new if=@IN@ of=@OUT@ status=noxfer,none
new if=@IN@ of=@OUT@ status=none,progress,noxfer
new if=@IN@ of=@OUT@ status=none,
new if=@IN@ of=@OUT@ foo=1
new if=@IN@ of=@OUT@ foo
new if=@IN@ of=@OUT@ conv=block,unblock
new if=@IN@ of=@OUT@ conv=ucase,lcase
new if=@IN@ of=@OUT@ conv=ascii,ebcdic
new if=@IN@ of=@OUT@ conv=ibm,ebcdic
new if=@IN@ of=@OUT@ conv=excl,nocreat
new if=@IN@.missing of=@OUT@
new if=@DIR@ of=@OUT@
new if=@IN@ of=@DIR@
pipeout if=@IN@ bs=1000 count=3 seek=1
pipeout if=@IN@ bs=1000 count=3
# numbers as GNU's xstrtoumax reads them: a suffix alone is 1 of it,
# '+', a 'B' anywhere in count/skip/seek counts bytes, 'B' after any
# suffix, one product only
new if=@IN@ of=@OUT@ bs=k count=3
new if=@IN@ of=@OUT@ bs=9xw count=3
new if=@IN@ of=@OUT@ bs=b count=+2
new if=@IN@ of=@OUT@ bs=3 count=1kB
new if=@IN@ of=@OUT@ bs=3 count=1KiB
new if=@IN@ of=@OUT@ bs=5 count=2Bx3
new if=@IN@ of=@OUT@ bs=2 count=5cB
new if=@IN@ of=@OUT@ bs=7 skip=1wB count=2
new if=@IN@ of=@OUT@ count=1kD
new if=@IN@ of=@OUT@ count=1Bx2B
new if=@IN@ of=@OUT@ count=2BB
new if=@IN@ of=@OUT@ count=0x
new if=@IN@ of=@OUT@ bs=1Y
new if=@IN@ of=@OUT@ bs=9223372036854775807
new if=@IN@ of=@OUT@ count=99999999999999999999x0
# iflag=directory and oflag=directory on standard input and output
stdin of=@OUT@ iflag=directory
stdout if=@IN@ oflag=directory
# an empty file name is opened, and fails, as any other
new if= of=@OUT@
new if=@IN@ of=
# skip= and seek= whose offset passes 2^63-1: GNU's seek errors
new if=@IN@ of=@OUT@ bs=2 skip=9223372036854775807 count=1
new if=/dev/zero of=@OUT@ bs=2 skip=4611686018427387904 count=1
old if=@IN@ of=@OUT@ bs=2 seek=9223372036854775807 count=1
new if=@IN@ of=@OUT@ bs=2 seek=9223372036854775807 count=1
old if=@IN@ of=@OUT@ bs=2 seek=9223372036854775807 count=1 conv=notrunc
new if=@IN@ of=/dev/null bs=2 seek=9223372036854775807 count=1 conv=notrunc
# offsets past the file system's largest file (where it has one below
# 2^63-1): lseek(2) and ftruncate(2) fail, GNU dd says so and quits
new if=@IN@ of=@OUT@ skip=9223372036854775807B count=1
stdin of=@OUT@ bs=1000 skip=9223372036854775807B count=1
new if=@IN@ of=@OUT@ seek=9223372036854775806B count=0
old if=@IN@ of=@OUT@ bs=1M seek=4294967296 count=1 conv=notrunc
stdout if=@IN@ bs=1000 seek=9223372036854775806B count=1 conv=notrunc
# getopt: options before operands, '--' ends them, '-x' is no option
new -- if=@IN@ of=@OUT@ count=3
new if=@IN@ -- of=@OUT@ count=3
new if=@IN@ of=@OUT@ -x
new if=@IN@ of=@OUT@ -- --help
new bogus if=@IN@ of=@OUT@ --bogus
new if=@IN@ of=@OUT@ oflag=fullblock conv=ascii,ebcdic
new if=@IN@ of=@OUT@ oflag=fullblock,direct,nocache
# file names quoted as GNU's quotearg quotes them
new if=@DIR@/it's of=@OUT@ bs=100 skip=50
new if=@DIR@/a=b of=@OUT@ bs=100 skip=50
new if=@DIR@/it's.missing of=@OUT@
new if=@DIR@/it's\$.missing of=@OUT@
new if=@IN@ of=@DIR@/no/it's
new if=@DIR@/a:b of=@OUT@ bs=100 skip=50
new if=@DIR@/é.missing of=@OUT@
# operands quoted as GNU's quote() quotes them: C escapes, the closing
# quote escaped, never cut short
new if=@IN@ of=@OUT@ conv=a\b
new if=@IN@ of=@OUT@ count=it's
new if=@IN@ of=@OUT@ conv=é
new if=@IN@ of=@OUT@ fo'o\=1
new if=@IN@ of=@OUT@ iflag=direct,aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
# oflag=append: every write at the end, a sparse hole between two
# writes is lost; O_DIRECT at an unaligned end fails
old if=@ZEROS@ of=@OUT@ bs=2 seek=3 oflag=append conv=sparse
old if=@ZEROS@ of=@OUT@ bs=1000 seek=7 oflag=append conv=sparse
old if=@ZEROS@ of=@OUT@ ibs=1000 obs=3000 oflag=append conv=sparse,notrunc
old if=@ZEROS@ of=@OUT@ bs=4096 oflag=append,direct conv=notrunc
old if=@ZEROS@ of=@OUT@ ibs=1000 obs=4096 oflag=append,direct conv=notrunc
# the files of /proc: read(2) to the end, whatever their size says
new if=/proc/version of=@OUT@
new if=/proc/version of=@OUT@ bs=10 skip=5
new if=/proc/self/mem of=@OUT@ bs=4096 count=2
# the same file at both ends with direct: the reads see the truncation
old if=@OUT@ of=@OUT@ bs=4k oflag=direct
old if=@OUT@ of=@OUT@ bs=512 seek=20 skip=4 count=3 oflag=direct
old if=@OUT@ of=@OUT@ bs=512 seek=80 skip=70 count=3 iflag=direct
old if=@OUT@ of=@OUT@ bs=512 count=3 iflag=directory,direct
# nofollow on a symbolic link: open(2)'s errno, which O_EXCL and
# O_DIRECTORY decide before O_NOFOLLOW
new if=@IN@ of=@LINK@ oflag=nofollow conv=excl
new if=@IN@ of=@LINK@ oflag=nofollow conv=nocreat
new if=@IN@ of=@LINK@ oflag=nofollow,directory
new if=@DLINK@ of=@OUT@ iflag=nofollow,directory
new if=@LINK@ of=@OUT@ iflag=nofollow,directory
new if=@DLINK@ of=@OUT@ iflag=nofollow
EOF
[ "$n" -ge 180 ] || fail "only $n rows ran"
echo "ok: $n rows"

# A short read followed by another read warns once, with count= (GNU's
# "partial read" warning).  The writer sends 100 bytes at a time and
# waits until the reader has passed them on (the output file grows), so
# every read is short.
wait_size() { # FILE BYTES: bounded wait until FILE has BYTES
	i=0
	while [ "$(wc -c <"$1" 2>/dev/null || echo 0)" -lt "$2" ]; do
		i=$((i + 1))
		[ $i -lt 10000 ] || fail "$1 never reached $2 bytes"
		sleep 0.01
	done
}
for who in g c; do
	if [ $who = g ]; then prog=$GNU; else prog="$CLIO dd"; fi
	rm -f "$tmp/${who}out"
	: >"$tmp/${who}out"
	$prog bs=1000 count=3 <"$tmp/fifo" 2>"$tmp/${who}err" | cat >"$tmp/${who}out" &
	{
		head -c 100 "$tmp/in"; wait_size "$tmp/${who}out" 100
		tail -c +101 "$tmp/in" | head -c 100; wait_size "$tmp/${who}out" 200
		tail -c +201 "$tmp/in" | head -c 100
	} >"$tmp/fifo"
	wait
done
cmp "$tmp/gout" "$tmp/cout" || fail "partial reads: the outputs differ"
norm "$tmp/gerr" >"$tmp/gnorm"
norm "$tmp/cerr" >"$tmp/cnorm"
grep -q 'warning: partial read (100 bytes); suggest iflag=fullblock' "$tmp/cnorm" ||
	fail "no partial read warning: $(cat "$tmp/cerr")"
cmp -s "$tmp/gnorm" "$tmp/cnorm" || fail "partial reads: stderr differs: $(diff "$tmp/gnorm" "$tmp/cnorm")"
echo "ok: partial reads warn as GNU dd does: $(head -n 1 "$tmp/cnorm")"

# In a UTF-8 locale GNU's quote() uses the locale's quotation marks, and
# the printable characters of a name are left as they are.
if locale -a 2>/dev/null | grep -qix 'c.utf-\{0,1\}8'; then
	mkdir "$tmp/u"
	cp "$tmp/short" "$tmp/u/é"
	for args in "conv=bogus" "count=1é" "bs=0x1 count=0" "oflag=fullblock" "é=1" \
		"if=$tmp/u/é skip=5 bs=1k" "if=$tmp/u/é\001 of=/dev/null" "status=a\vb"; do
		# shellcheck disable=SC2086
		set -- $(printf "$args")
		LC_ALL=C.UTF-8 "$GNU" "$@" of=/dev/null </dev/null 2>"$tmp/gerr" >/dev/null || true
		LC_ALL=C.UTF-8 $CLIO dd "$@" of=/dev/null </dev/null 2>"$tmp/cerr" >/dev/null || true
		norm "$tmp/gerr" | head -n 1 >"$tmp/gnorm"
		norm "$tmp/cerr" | head -n 1 >"$tmp/cnorm"
		cmp -s "$tmp/gnorm" "$tmp/cnorm" ||
			fail "C.UTF-8, $args: GNU: $(cat "$tmp/gnorm"), clio: $(cat "$tmp/cnorm")"
		echo "ok: C.UTF-8, $args: $(cat "$tmp/cnorm")"
	done
fi

# A write across the largest file the file system takes (ext4: 16 TiB
# less 4 KiB) writes up to it, then fails with EFBIG, as GNU's does (clio
# wrote nothing, or said ENOSPC); the files, sparse, are compared by their
# sizes and their last bytes.  Where the limit lies further, both write it all.
lim_off=17592186039320
for who in gnu clio; do
	rm -f "$tmp/lim.$who"
	rc=0
	if [ $who = gnu ]; then
		"$GNU" if="$tmp/in" of="$tmp/lim.$who" seek=${lim_off}B ibs=1000 obs=3000 count=10 \
			conv=notrunc 2>"$tmp/lim.$who.err" || rc=$?
	else
		$CLIO dd if="$tmp/in" of="$tmp/lim.$who" seek=${lim_off}B ibs=1000 obs=3000 count=10 \
			conv=notrunc 2>"$tmp/lim.$who.err" || rc=$?
	fi
	# the statuses as dd-compare.sh takes them: success or failure
	echo "$([ $rc -eq 0 ] && echo ok || echo failed) $(stat -c %s "$tmp/lim.$who")" >"$tmp/lim.$who.rc"
	tail -c 5000 "$tmp/lim.$who" >"$tmp/lim.$who.tail"
	rm -f "$tmp/lim.$who"
done
norm "$tmp/lim.gnu.err" | sed "s/lim\.gnu/lim.X/" >"$tmp/gnorm"
norm "$tmp/lim.clio.err" | sed "s/lim\.clio/lim.X/" >"$tmp/cnorm"
cmp -s "$tmp/gnorm" "$tmp/cnorm" ||
	fail "a write across the largest file: stderr differs: $(diff "$tmp/gnorm" "$tmp/cnorm")"
cmp -s "$tmp/lim.gnu.rc" "$tmp/lim.clio.rc" ||
	fail "a write across the largest file: status and size: GNU $(cat "$tmp/lim.gnu.rc"), clio $(cat "$tmp/lim.clio.rc")"
cmp -s "$tmp/lim.gnu.tail" "$tmp/lim.clio.tail" || fail "a write across the largest file: the last bytes differ"
echo "ok: a write across the largest file: $(head -n 1 "$tmp/cnorm"), status and size $(cat "$tmp/lim.clio.rc")"

# A FIFO named without a directory is read as a FIFO.
(cd "$tmp" && { head -c 5000 in >fifo & "$CLIO" dd if=fifo of=fifo.out bs=1k 2>fifo.err; wait; }) ||
	fail "if=fifo (relative) failed: $(cat "$tmp/fifo.err")"
head -c 5000 "$tmp/in" | cmp - "$tmp/fifo.out" || fail "if=fifo (relative): the copy differs"
echo "ok: if=fifo in the current directory"
exit 0
