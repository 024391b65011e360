#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-bench-core.sh - `clio bench core --quick --json`: every case runs,
# each with a positive figure for clio and for its peer, and each ratio is
# the quotient of the two figures printed beside it (and, with one run,
# the note's ratio of that run); "met" follows the target ((d) at most,
# the others at least).  The figures themselves are
# not asserted: the machine is shared and noisy.  The (a) rows have a
# copy bound, and the scaling row's is the quotient of the 2- and 1-thread
# ones, as the note says; (b) has its bound (the peer's reads copied out
# in 4 KiB pieces) and (c) its own (32 threads of O_DIRECT pread), and
# the note says the target lies above each exactly when it does.  The temporary files are
# gone afterwards, also after an interrupt (exit 70).  It runs under TSan
# too (tests/tsan.list): 1 to 32 threads on one cache through the API.
set -e
. "$(dirname "$0")/functions.sh"
command -v python3 >/dev/null 2>&1 || { echo "python3 not found"; exit 77; }
mkdir "$tmp/dir"

TMPDIR="$tmp/dir" "$CLIO" bench core --quick --json >"$tmp/core.json" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio bench core exited $?"; }
python3 -m json.tool "$tmp/core.json" >/dev/null || fail "not JSON: $(cat "$tmp/core.json")"
python3 - "$tmp/core.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["quick"] is True, doc
ex = {e["experiment"]: e for e in doc["experiments"]}
assert set(ex) == {"core"}, ex.keys()
rows = {r["case"][:3]: [] for r in ex["core"]["rows"]}
for r in ex["core"]["rows"]:
    rows[r["case"][:3]].append(r)
assert sorted(rows) == ["(a)", "(b)", "(c)", "(d)"], sorted(rows)
assert len(rows["(a)"]) == 4, rows["(a)"]
for r in ex["core"]["rows"]:
    for k in ("clio", "peer", "ratio", "target"):
        assert isinstance(r[k], (int, float)) and r[k] > 0, (k, r)
    q = r["clio"] / r["peer"]
    assert abs(r["ratio"] - q) <= 1e-4 * q, ("ratio is not clio/peer", r)
    at_most = r["case"].startswith("(d)")
    met = r["ratio"] <= r["target"] if at_most else r["ratio"] >= r["target"]
    assert r["met"] == ("yes" if met else "NO"), ("met", r)
    print("ok: %s: %.6g / %.6g = %.6g, met %s" % (r["case"], r["clio"], r["peer"], r["ratio"], r["met"]))
a = {r["case"]: r for r in rows["(a)"]}
s = a["(a) clio 2 threads / 1 thread"]
assert s["clio"] == a["(a) cached 4k random reads, 2 threads"]["clio"], s
assert s["peer"] == a["(a) cached 4k random reads, 1 thread"]["clio"], s
for r in rows["(a)"]:
    assert isinstance(r.get("bound"), (int, float)) and r["bound"] > 0, ("copy bound", r)
b1 = a["(a) cached 4k random reads, 1 thread"]["bound"]
b2 = a["(a) cached 4k random reads, 2 threads"]["bound"]
assert abs(s["bound"] - b2 / b1) <= 1e-3 * s["bound"], ("scaling bound", s, b1, b2)
assert ("rate, %.2f, is the most" % s["bound"]) in ex["core"]["note"], "the note's bound"
c = rows["(c)"][0]
assert isinstance(c.get("bound"), (int, float)) and c["bound"] > 0, ("(c) bound", c)
above = c["target"] * c["peer"] > c["bound"]
assert ("the target, 0.8x the peer, lies above it" in ex["core"]["note"]) == above, ("(c) note", c)
b = rows["(b)"][0]
assert isinstance(b.get("bound"), (int, float)) and b["bound"] > 0, ("(b) bound", b)
above = b["target"] * b["peer"] > b["bound"]
assert ("the target, 0.9x the peer, lies above it" in ex["core"]["note"]) == above, ("(b) note", b)
print("ok: the copy bound of (a) and its scaling, the bounds of (b) and (c) and the note's word on them")
d = rows["(d)"][0]
assert abs(d["pct_of_cache"] - 100 * d["ratio"]) <= 1e-3 * d["pct_of_cache"], d
print("ok: the scaling row and (d)'s percentage agree with the table")
# one run (--quick): the note's clio/peer of each timed case is the table's
note = ex["core"]["note"]
per = note.split("clio/peer in each run:")[1].strip().split("; ")
assert len(per) == 5, per
for text, r in zip(per, rows["(a)"][:3] + rows["(b)"] + rows["(c)"]):
    assert abs(float(text.split()[-1]) - r["ratio"]) < 0.006, (text, r)
print("ok: the note's per-run ratios are the table's")
PY
[ -z "$(ls -A "$tmp/dir")" ] || fail "files left behind: $(ls "$tmp/dir")"
echo "ok: no file left behind"

# an interrupt while the big file is read: exit 70, files removed
TMPDIR="$tmp/dir" "$CLIO" bench core --runs 100 --size 64M >/dev/null 2>"$tmp/err" &
pid=$!
i=0
until [ -n "$(ls -A "$tmp/dir")" ] || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
kill -INT $pid
set +e
wait $pid
rc=$?
set -e
[ $rc -eq 70 ] || fail "interrupted clio bench core exited $rc, not 70"
grep -q "interrupted" "$tmp/err" || fail "no word of the interrupt: $(cat "$tmp/err")"
[ -z "$(ls -A "$tmp/dir")" ] || fail "files left behind after SIGINT: $(ls "$tmp/dir")"
echo "ok: SIGINT: exit 70, no file left behind"

for bad in "core --size 12Q" "core --runs 0" "core --size 512K"; do
	set +e
	# shellcheck disable=SC2086
	"$CLIO" bench $bad >/dev/null 2>"$tmp/bad.err"
	rc=$?
	set -e
	[ $rc -eq 64 ] || fail "'clio bench $bad' exited $rc, not 64"
	[ "$(wc -l <"$tmp/bad.err")" -eq 1 ] || fail "'clio bench $bad' said: $(cat "$tmp/bad.err")"
done
echo "ok: bad invocations exit 64 with one line"
