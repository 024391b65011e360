#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-bench-rbd.sh - `clio bench rbd --quick --json` on an image of a
# one-node Ceph cluster (tests/ceph-common.sh): every workload runs for
# clio and for librbd's three modes through fio's rbd engine, each with a
# positive figure; each ratio is clio's figure over the best of librbd's
# two caches (and over no cache), and "met" follows the target.  The
# figures themselves are not asserted: the machine is shared and noisy.
# Without --file, and with a snapshot, it fails with one line.
. "$(dirname "$0")/functions.sh"
# a table of timings: checked in the plain run only (the sanitized runs
# cover the library it drives through the other tests)
[ "${CLIO_FLAVOUR:-plain}" = plain ] || { echo "the bench's tables are checked in the plain run"; exit 77; }
command -v fio >/dev/null 2>&1 || { echo "fio not found (apt-get install fio)"; exit 77; }
. "$(dirname "$0")/ceph-common.sh"

ceph_start 16M
mkdir "$tmp/dir"
TMPDIR="$tmp/dir" "$CLIO" bench rbd --quick --json --file "$(ceph_uri)" >"$tmp/rbd.json" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio bench rbd exited $?"; }
python3 - "$tmp/rbd.json" <<'PY' || fail "clio bench rbd --json: $(cat "$tmp/rbd.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
ex = {e["experiment"]: e for e in doc["experiments"]}
assert set(ex) == {"rbd"}, ex.keys()
rows = ex["rbd"]["rows"]
assert [r["workload"][:3] for r in rows] == ["(a)", "(b)", "(c)", "(d)"], rows
for r in rows:
    for k in ("clio_mbs", "writeback_mbs", "writearound_mbs", "nocache_mbs", "ratio",
              "ratio_nocache", "target"):
        assert isinstance(r[k], (int, float)) and r[k] > 0, (k, r)
    q = r["clio_mbs"] / max(r["writeback_mbs"], r["writearound_mbs"])
    assert abs(r["ratio"] - q) <= 0.02 * q, ("ratio is not clio/best cache", r)
    assert r["met"] == ("yes" if r["ratio"] >= r["target"] else "NO"), ("met", r)
    print("ok: %s: clio %.1f, writeback %.1f, writearound %.1f, no cache %.1f MB/s: "
          "%.2fx the best cache (target %g, met %s)" % (r["workload"], r["clio_mbs"],
          r["writeback_mbs"], r["writearound_mbs"], r["nocache_mbs"], r["ratio"],
          r["target"], r["met"]))
PY
[ -z "$(ls -A "$tmp/dir")" ] || fail "clio bench rbd left $(ls "$tmp/dir")"
if "$CLIO" bench rbd --quick 2>"$tmp/err"; then fail "clio bench rbd without --file succeeded"; fi
grep -q "needs --file" "$tmp/err" || fail "without --file: $(cat "$tmp/err")"
if "$CLIO" bench rbd --quick --file "rbd:rbd/img@s?conf=$CEPH_CONF" 2>"$tmp/err"; then
	fail "clio bench rbd on a snapshot succeeded"
fi
grep -q "not a snapshot" "$tmp/err" || fail "on a snapshot: $(cat "$tmp/err")"
echo "ok: without --file, and on a snapshot, one line: $(cat "$tmp/err")"
