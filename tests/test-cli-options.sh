#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-cli-options.sh - the clio command's options as a new user meets
# them: clio --help, -h, help, --version and version exit 0 on standard
# output, and refuse a further argument; every subcommand's --help and
# --version exit 0 on standard output with nothing on standard error
# (clio dd --help naming every option); an unknown command, an unknown
# long or short option and an option without its value exit 64 with one
# line on standard error that names the subcommand and the option, and
# nothing on standard output.  A standard output that cannot be written
# (/dev/full) is exit 74 with one line naming it, for clio bench (text and
# --json) and clio info; clio bench --plot naming a file that is no
# directory is 73 before any experiment runs.  "--" ends the options
# of clio info, bench and umount.
. "$(dirname "$0")/functions.sh"

# run ARGS...: clio ARGS, $rc, $tmp/out, $tmp/err
run() {
	rc=0
	"$CLIO" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
}

# ok_info ARGS...: exit 0, output on stdout, none on stderr
ok_info() {
	run "$@"
	[ $rc -eq 0 ] || fail "clio $*: exit $rc: $(head -n 3 "$tmp/err")"
	[ -s "$tmp/out" ] || fail "clio $*: nothing on standard output"
	[ ! -s "$tmp/err" ] || fail "clio $*: standard error: $(head -n 3 "$tmp/err")"
}

# bad_usage WORD ARGS...: exit 64, one line on stderr naming WORD, stdout empty
bad_usage() {
	word=$1
	shift
	run "$@"
	[ $rc -eq 64 ] || fail "clio $*: exit $rc, want 64"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] ||
		{ sed 's/^/    /' "$tmp/err" >&2; fail "clio $*: stderr is not one line"; }
	grep -qF -- "$word" "$tmp/err" || fail "clio $*: the line does not name '$word': $(cat "$tmp/err")"
	[ ! -s "$tmp/out" ] || fail "clio $*: wrote to standard output"
}

for a in --help -h help; do
	ok_info $a
	grep -q '^usage: clio dd' "$tmp/out" || fail "clio $a: no usage"
done
for a in --version version; do
	ok_info $a
	grep -qx 'clio [0-9][0-9.]*' "$tmp/out" || fail "clio $a: '$(cat "$tmp/out")'"
done
echo "ok: clio --help, -h, help, --version, version"
for a in version help --version --help; do
	bad_usage "'--bogus'" $a --bogus
	bad_usage "'extra'" $a extra
done
echo "ok: clio version and help: a further argument is one line, exit 64"

for c in dd bench mount umount stat info serve; do
	ok_info $c --help
	grep -q "^usage: clio $c" "$tmp/out" || fail "clio $c --help: no usage line: $(head -n 1 "$tmp/out")"
	ok_info $c --version
	grep -qx 'clio [0-9][0-9.]*' "$tmp/out" || fail "clio $c --version: '$(cat "$tmp/out")'"
	bad_usage "--bogus" $c --bogus
	grep -q "^clio $c: " "$tmp/err" || fail "clio $c --bogus: not 'clio $c: ...': $(cat "$tmp/err")"
done
echo "ok: every subcommand: --help and --version exit 0; --bogus: one line, exit 64"

# clio dd --help names every option clio(1) gives it
for o in --disk-cache-brun --disk-cache-bcull --disk-cache-bstop; do
	run dd --help
	grep -q -- "$o=" "$tmp/out" || fail "clio dd --help does not name $o"
done
echo "ok: clio dd --help names the disk cache's options"

bad_usage "'Z'" stat -Z
grep -qx "clio stat: invalid option -- 'Z'" "$tmp/err" || fail "stat -Z: $(cat "$tmp/err")"
bad_usage "'Z'" serve mem:size=1M --socket "$tmp/s" -Z
bad_usage "'Z'" mount -Z "$tmp" "$tmp"
# options after the operands, as FUSE file systems take them
bad_usage "'Z'" mount "$tmp" "$tmp" -Z
bad_usage "'3000'" mount "$tmp" "$tmp" -o bsize=3000
bad_usage "1 operand:" mount "$tmp"
bad_usage "'extra' is a third" mount "$tmp" "$tmp" extra
bad_usage "-Z" info -Z mem:size=1M
bad_usage "'i'" stat -i
grep -qx "clio stat: option requires an argument -- 'i'" "$tmp/err" || fail "stat -i: $(cat "$tmp/err")"
bad_usage "--socket" serve mem:size=1M --socket
grep -qx "clio serve: option '--socket' requires an argument" "$tmp/err" ||
	fail "serve --socket: $(cat "$tmp/err")"
bad_usage "'o'" serve mem:size=1M -o
bad_usage "port ''" serve mem:size=1M --port=
bad_usage "--bogus=1" stat --bogus=1
bad_usage "'bogus'" bogus
bad_usage "'-x'" -x
bad_usage "no device" serve --socket "$tmp/s"
bad_usage "mem:size=2M" serve mem:size=1M mem:size=2M --socket "$tmp/s"
[ ! -e "$tmp/s" ] || fail "a refused clio serve made its socket"
echo "ok: short options, missing values, unknown commands: one line each, exit 64"

# clio stat: a directory that is no clio mount is 66, one line; no
# mount point with -c or -x is 64
run stat "$tmp"
[ $rc -eq 66 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF "$tmp" "$tmp/err" ||
	fail "clio stat DIR: exit $rc: $(cat "$tmp/err")"
bad_usage "-c" stat -c 2 "$tmp"
bad_usage "-x" stat -x "$tmp"
bad_usage "interval" stat -i 0 "$tmp"
# the interval's limit named; a count past long's range is no count
bad_usage "'1e9' (seconds, more than 0 and at most 86400)" stat -i 1e9 "$tmp"
bad_usage "'99999999999999999999'" stat -c 99999999999999999999 "$tmp"
# options after the mount point are options
bad_usage "'0'" stat "$tmp" -i 0
run stat "$tmp" --json
[ $rc -eq 66 ] && ! grep -q -- "--json" "$tmp/err" || fail "clio stat DIR --json: exit $rc: $(cat "$tmp/err")"
echo "ok: clio stat: no mount 66, bad combinations 64, one line each"

# "--" ends the options: what follows is the operand, even one starting with -
cp /dev/null "$tmp/-dev"
(cd "$tmp" && "$CLIO" info -- -dev >/dev/null) || fail "clio info -- -dev: exit $?"
(cd "$tmp" && "$CLIO" info --json -- -dev | grep -q '"device": "-dev"') ||
	fail "clio info --json -- -dev"
run bench --quick -- maxbsize
[ $rc -eq 0 ] || fail "clio bench --quick -- maxbsize: exit $rc: $(cat "$tmp/err")"
run umount -- "$tmp"
[ $rc -eq 64 ] && grep -q "not a clio mount" "$tmp/err" ||
	fail "clio umount -- DIR: exit $rc: $(cat "$tmp/err")"
bad_usage "'$tmp'" umount "$tmp" "$tmp"
echo "ok: -- ends the options of clio info, bench and umount; a second mount point is one line"

# full_out WORD ARGS...: clio ARGS >/dev/full exits 74, one line naming WORD
full_out() {
	word=$1
	shift
	rc=0
	"$CLIO" "$@" >/dev/full 2>"$tmp/err" </dev/null || rc=$?
	[ $rc -eq 74 ] || fail "clio $* >/dev/full: exit $rc, want 74: $(cat "$tmp/err")"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF -- "$word" "$tmp/err" ||
		fail "clio $* >/dev/full: $(cat "$tmp/err")"
}
# --plot naming a file that is no directory: 73 before any experiment runs
: >"$tmp/plotfile"
run bench maxbsize --plot "$tmp/plotfile"
[ $rc -eq 73 ] || fail "clio bench --plot FILE: exit $rc, want 73: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF "$tmp/plotfile" "$tmp/err" ||
	fail "clio bench --plot FILE: $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] || fail "clio bench --plot FILE ran: $(head -n 2 "$tmp/out")"
echo "ok: clio bench --plot FILE: 73 at once"
if [ -c /dev/full ]; then
	full_out "standard output" bench maxbsize
	full_out "standard output" bench maxbsize --json
	full_out "standard output" bench rawblock --quick --json
	full_out "standard output" info mem:size=1M
	full_out "standard output" info mem:size=1M --json
	echo "ok: clio bench and clio info to a full standard output: 74, one line"
fi
exit 0
