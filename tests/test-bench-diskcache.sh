#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-bench-diskcache.sh - `clio bench diskcache --quick --json` over
# NFS (ganesha and rpcproxy, started by the bench in a private namespace)
# and NBD (nbdkit): the three cases run on each, each figure positive,
# each ratio the quotient of the figures beside it, "met" following its
# target, and the warm runs (a restart of the client) read 0 bytes from
# either device unless the cold runs dropped insertions (then no more
# than those blocks: the bench checks).  The figures
# themselves are not asserted: the machine is shared and noisy.  The
# temporary directory is gone afterwards.  Where nbdfuse and mkfs.ext4
# are there (plain builds), the NFS rows have the slow DIR column (a cold run with DIR
# on a slow simulated disk), its ratio the quotient beside it.
set -e
. "$(dirname "$0")/functions.sh"
command -v python3 >/dev/null 2>&1 || { echo "python3 not found"; exit 77; }
command -v nbdkit >/dev/null 2>&1 || { echo "nbdkit not found (apt-get install nbdkit)"; exit 77; }
command -v ganesha.nfsd >/dev/null 2>&1 || { echo "ganesha.nfsd not found (apt-get install nfs-ganesha nfs-ganesha-vfs)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "the NFS rows need root (a private namespace)"; exit 77; }
[ "${CLIO_FLAVOUR:-plain}" = plain ] || { echo "the bench's tables are checked in the plain run"; exit 77; }
[ -x "$(dirname "$CLIO")/tests/tools/rpcproxy" ] || fail "rpcproxy not built (make tests)"
mkdir "$tmp/dir"

TMPDIR="$tmp/dir" "$CLIO" bench diskcache --quick --json >"$tmp/dc.json" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio bench diskcache exited $?"; }
python3 - "$tmp/dc.json" "$tmp/err" <<'PY' || fail "clio bench diskcache --json: $(cat "$tmp/dc.json")"
import json, os, re, shutil, sys
doc = json.load(open(sys.argv[1]))
err = open(sys.argv[2]).read()
ex = {e["experiment"]: e for e in doc["experiments"]}
assert set(ex) == {"diskcache"}, ex.keys()
rows = ex["diskcache"]["rows"]
assert [(r["device"], r["case"][:3]) for r in rows] == [
    (d, c) for d in ("nfs", "nbd") for c in ("(a)", "(b)", "(c)")], rows
def near(a, b):
    return abs(a - b) <= 0.02 * abs(b) + 1e-3
for r in rows:
    for k in ("cold_s", "warm_s", "local_s", "none_s", "clio_file_s"):
        assert isinstance(r[k], (int, float)) and r[k] > 0, (k, r)
    assert near(r["speedup"], r["cold_s"] / r["warm_s"]), ("speedup", r)
    assert near(r["vs_local"], r["local_s"] / r["warm_s"]), ("vs_local", r)
    assert near(r["miss_cost"], r["cold_s"] / r["none_s"]), ("miss_cost", r)
    assert r["speedup_met"] == ("yes" if r["speedup"] >= 20 else "no"), r
    assert r["vs_local_met"] == ("yes" if r["vs_local"] >= 0.8 else "no"), r
    assert r["miss_cost_met"] == ("yes" if r["miss_cost"] <= 1.10 else "no"), r
    print("ok: %s %s: cold %.4f s, warm %.4f s (%.1fx), local %.4f s, no tier %.4f s (miss cost %.2f)"
          % (r["device"], r["case"], r["cold_s"], r["warm_s"], r["speedup"], r["local_s"], r["none_s"], r["miss_cost"]))
    # the slow DIR (NFS rows, where nbdfuse and mkfs.ext4 are there; not
    # sanitized: nbdkit cannot load a sanitized plugin for clio serve)
    # (a machine without loop devices gets the bench's one-line reason)
    if (r["device"] == "nfs" and shutil.which("nbdfuse") and shutil.which("mkfs.ext4")
            and os.environ.get("CLIO_FLAVOUR", "plain") == "plain"):
        assert r.get("slow_s") is not None or "no slow DIR column: " in err, ("no slow DIR column", r)
    if r.get("slow_s") is not None:
        assert r["device"] == "nfs" and r["slow_s"] > 0, r
        assert near(r["slow_cost"], r["slow_s"] / r["none_s"]), ("slow_cost", r)
        assert r["slow_cost_met"] == ("yes" if r["slow_cost"] <= 1.10 else "no"), r
        print("ok: %s %s: DIR on the slow disk %.4f s (miss cost %.2f)"
              % (r["device"], r["case"], r["slow_s"], r["slow_cost"]))
m = re.search(r"nfs cold runs (\d+), warm runs (\d+); nbd cold runs (\d+), warm runs (\d+) .*nfs (\d+), nbd (\d+)\)",
              ex["diskcache"]["note"])
assert m, ex["diskcache"]["note"]
# a restart reads nothing from the device but what the cold run dropped
# from the tier's insertion queue (the bench fails if it reads more)
assert m.group(2) == "0" or m.group(5) != "0", ex["diskcache"]["note"]
assert m.group(4) == "0" or m.group(6) != "0", ex["diskcache"]["note"]
assert int(m.group(1)) > 0 and int(m.group(3)) > 0, ex["diskcache"]["note"]
PY
[ -z "$(ls -A "$tmp/dir")" ] || fail "clio bench diskcache left $(ls "$tmp/dir")"
echo "ok: clio bench diskcache --quick --json"
