# SPDX-License-Identifier: BSD-2-Clause
# dd-compare.sh - clio dd beside GNU dd 9.1 on one row of operands, for
# the tests that compare them.  Source it after functions.sh:
#   . "$(dirname "$0")/dd-compare.sh"
# It skips (77) without GNU dd 9, makes the inputs $tmp/in (100000
# random bytes), $tmp/old (30000), $tmp/zeros (holes of zeros between
# data) and defines
#   compare PRE ARGS...
# which runs both programs with ARGS (@IN@, @ZEROS@, @DIR@ the inputs,
# @OUT@ the output file, @DEV@ the block device $dev) and fails unless
# the output (file or device) is the same byte for byte, standard error
# is the same once the program names, the times and rates and clio's own
# lines are masked, and both exit 0 or both do not.  PRE: new (no output
# file), old (the output starts as a copy of old), pipe (the input
# through a pipe), stdin (standard input opened on $tmp/in), stdout
# (standard output opened on the output file), pipeout (standard output
# a pipe into the output file),
# dev (the device $dev starts as $dev_init; its bytes are compared
# too).
GNU=${GNU_DD:-dd}
"$GNU" --version 2>/dev/null | head -n 1 | grep -q 'coreutils. 9\.' || {
	echo "no GNU dd 9 to compare with"
	exit 77
}
export LC_ALL=C
head -c 100000 /dev/urandom >"$tmp/in"
head -c 30000 /dev/urandom >"$tmp/old"
{ head -c 5000 "$tmp/in"; head -c 20000 /dev/zero; head -c 3000 "$tmp/in";
  head -c 8192 /dev/zero; } >"$tmp/zeros"
mkdir -p "$tmp/dir"
dev=""
dev_init=""
rows=0

dd_norm() { # stderr of either program, masked
	sed -e 's/^\(clio \)\{0,1\}[^ ]*dd: /dd: /' \
	    -e 's/\(copied\), .*/\1, T s, R/' \
	    -e '/^[^ ]*: [0-9]* reads, [0-9]* writes, /d' \
	    -e '/^[^ ]*: r\/s [0-9.]*, w\/s /d' \
	    -e '/^cache: [0-9]* hits/d' -e '/^clock: /d' \
	    -e "s|$tmp/[a-z]out|OUT|g" "$1"
}

compare() {
	pre=$1
	shift
	args="$*"
	rows=$((rows + 1))
	for who in g c; do
		out="$tmp/${who}out"
		rm -f "$out"
		case $pre in
		old|pipe|stdout) cp "$tmp/old" "$out";;
		dev) "$GNU" if="$dev_init" of="$dev" bs=64k conv=notrunc,fsync status=none ||
			fail "cannot reset $dev";;
		esac
		# shellcheck disable=SC2086
		set -- $(printf '%s\n' $args | sed -e "s|@IN@|$tmp/in|g" -e "s|@OUT@|$out|g" \
			-e "s|@ZEROS@|$tmp/zeros|g" -e "s|@DIR@|$tmp/dir|g" -e "s|@DEV@|$dev|g")
		if [ $who = g ]; then prog=$GNU; else prog="$CLIO dd"; fi
		rc=0
		case $pre in
		pipe)   cat "$tmp/in" | $prog "$@" 2>"$tmp/${who}err" || rc=$?;;
		stdin)  $prog "$@" <"$tmp/in" 2>"$tmp/${who}err" || rc=$?;;
		pipeout) { $prog "$@" 2>"$tmp/${who}err" </dev/null || echo $? >"$tmp/rc"; } |
			cat >"$out"
			[ ! -e "$tmp/rc" ] || rc=$(cat "$tmp/rc"); rm -f "$tmp/rc";;
		stdout) $prog "$@" 2>"$tmp/${who}err" 1<>"$out" </dev/null || rc=$?;;
		*)      $prog "$@" 2>"$tmp/${who}err" </dev/null || rc=$?;;
		esac
		eval "${who}rc=$rc"
		[ "$pre" != dev ] || cat "$dev" >"$tmp/${who}dev" || fail "cannot read $dev"
	done
	set -- $args
	what="row $rows ($pre $*)"
	if [ -e "$tmp/gout" ] || [ -e "$tmp/cout" ]; then
		cmp -s "$tmp/gout" "$tmp/cout" ||
			fail "$what: the outputs differ ($(wc -c <"$tmp/gout" 2>&1) / $(wc -c <"$tmp/cout" 2>&1) bytes; first: $(cmp "$tmp/gout" "$tmp/cout" 2>&1 | head -n 1))"
	fi
	if [ "$pre" = dev ] && ! cmp -s "$tmp/gdev" "$tmp/cdev"; then
		fail "$what: the devices differ (first: $(cmp "$tmp/gdev" "$tmp/cdev" 2>&1 | head -n 1))"
	fi
	dd_norm "$tmp/gerr" >"$tmp/gnorm"
	dd_norm "$tmp/cerr" >"$tmp/cnorm"
	if ! cmp -s "$tmp/gnorm" "$tmp/cnorm"; then
		diff "$tmp/gnorm" "$tmp/cnorm" | sed 's/^/    /' >&2 || true
		fail "$what: standard error differs (< GNU, > clio)"
	fi
	if { [ "$grc" -eq 0 ] && [ "$crc" -ne 0 ]; } || { [ "$grc" -ne 0 ] && [ "$crc" -eq 0 ]; }; then
		fail "$what: GNU dd exits $grc, clio dd $crc: $(cat "$tmp/cerr")"
	fi
	echo "ok: $what: exit $grc/$crc, $(head -n 1 "$tmp/cnorm")"
}

# compare_rows: compare each line of standard input (PRE ARGS...;
# blank lines and # comments skipped)
compare_rows() {
	while read -r line; do
		case $line in ''|'#'*) continue;; esac
		# shellcheck disable=SC2086
		compare $line
	done
}
