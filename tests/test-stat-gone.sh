#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-stat-gone.sh - clio stat on a mount that went away: -i SECONDS
# prints its first reports, then, once the mount is unmounted, one line
# naming the mount point and exit 66 before COUNT reports, the lines
# printed so far whole and in iostat's columns; a mount whose daemon was
# killed (the kernel's mount left, "Transport endpoint is not
# connected") is 66 with one line, in the summary, --json (still a JSON
# document) and -i; a dead mount among live ones (named, or without
# MOUNTPOINT) is one line and 66 while the live one is reported, also
# by -i.
. "$(dirname "$0")/mount-common.sh"
# (mount_start sets $src and $mnt: the paths are named here once)
d1=$tmp/mnt d2=$tmp/mnt2 s1=$tmp/src s2=$tmp/src2
mkdir "$s1" "$d1" "$s2" "$d2"
echo data >"$s1/f"

# one_line RC FILE WORD: the exit status was RC and FILE is one line naming WORD
one_line() {
	[ "$rc" -eq "$1" ] || fail "exit $rc, want $1: $(cat "$2")"
	[ "$(wc -l <"$2")" -eq 1 ] || { sed 's/^/    /' "$2" >&2; fail "not one line"; }
	grep -qF -- "$3" "$2" || fail "'$3' not named: $(cat "$2")"
}

# ------------------------------------------------------------ unmounted during -i
mount_start "$s1" "$d1"
: >"$tmp/iout"
"$CLIO" stat -i 0.2 -c 50 "$d1" >"$tmp/iout" 2>"$tmp/ierr" &
stat_pid=$!
i=0
while [ "$(wc -l <"$tmp/iout")" -lt 4 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
[ "$(wc -l <"$tmp/iout")" -ge 4 ] || fail "clio stat -i: no reports: $(cat "$tmp/ierr")"
mount_stop "$d1"
rc=0
wait "$stat_pid" || rc=$?
one_line 66 "$tmp/ierr" "$d1"
n=$(wc -l <"$tmp/iout")
[ "$n" -lt 50 ] || fail "clio stat -i went on after the unmount ($n lines)"
awk 'NR > 2 && NF != 7 { exit 1 }' "$tmp/iout" || { cat "$tmp/iout"; fail "a broken report line"; }
echo "ok: unmounted during -i: $((n - 2)) reports, then one line, exit 66"

# ------------------------------------------------------------ a daemon killed
mount_start "$s2" "$d2"
keep_pid=$mount_pid
mount_start "$s1" "$d1"
kill -9 "$mount_pid"
wait "$mount_pid" 2>/dev/null
mount_pid=$keep_pid
rc=0; "$CLIO" stat "$d1" >"$tmp/out" 2>"$tmp/err" || rc=$?
one_line 66 "$tmp/err" "$d1"
[ ! -s "$tmp/out" ] || fail "clio stat of a dead mount printed: $(cat "$tmp/out")"
rc=0; "$CLIO" stat --json "$d1" >"$tmp/out" 2>"$tmp/err" || rc=$?
one_line 66 "$tmp/err" "$d1"
python3 -m json.tool "$tmp/out" >/dev/null || fail "--json of a dead mount is no JSON: $(cat "$tmp/out")"
rc=0; "$CLIO" stat -i 0.1 -c 3 "$d1" >"$tmp/out" 2>"$tmp/err" || rc=$?
one_line 66 "$tmp/err" "$d1"
rc=0; "$CLIO" stat >"$tmp/out" 2>"$tmp/err" || rc=$?
one_line 66 "$tmp/err" "$d1"
grep -q "^$d2: clio mount of $s2" "$tmp/out" || fail "the live mount is not reported: $(cat "$tmp/out")"
rc=0; "$CLIO" stat -i 0.1 -c 2 "$d1" "$d2" >"$tmp/out" 2>"$tmp/err" || rc=$?
one_line 66 "$tmp/err" "$d1"
[ "$(wc -l <"$tmp/out")" -eq 4 ] && awk 'NR > 2 && NF != 7 { exit 1 }' "$tmp/out" &&
	grep -q "mnt2 storage" "$tmp/out" ||
	{ cat "$tmp/out"; fail "clio stat -i: the live mount beside a dead one is not reported"; }
echo "ok: a killed daemon: 66 with one line (summary, --json, -i); the live mount still reported"
fusermount3 -uz "$d1" 2>/dev/null
mount_stop "$d2"
exit 0
