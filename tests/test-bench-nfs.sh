#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-bench-nfs.sh - `clio bench nfs --quick --json` (it starts its own
# NFS-Ganesha, rpcbind and proxies in a private namespace): the table has
# a row for each case (test5 write, test5 read, open-heavy's first pass and
# its later ones) at each round
# trip (0, 1, 5 ms) for each system (plain libnfs, close-to-open, lease),
# each with its seconds and RPC counts; test5 rows have MB/s, and the
# ratio is the system's MB/s over plain libnfs's at the same round trip;
# the 1 ms rows with a target say whether it was met.  Plain libnfs sends
# one WRITE or READ per 8 KiB.  A reader of its standard error that goes
# away (| head) does not kill it before it stops its server.  The figures themselves are not asserted:
# the machine is shared and noisy.
. "$(dirname "$0")/functions.sh"
command -v python3 >/dev/null 2>&1 || { echo "python3 not found"; exit 77; }
command -v ganesha.nfsd >/dev/null 2>&1 || { echo "ganesha.nfsd not found (apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "clio bench nfs needs root (unshare -m -n)"; exit 77; }
[ -c /dev/fuse ] || { echo "skip: /dev/fuse is absent"; exit 77; }
[ "${CLIO_FLAVOUR:-plain}" = plain ] || { echo "the bench's tables are checked in the plain run"; exit 77; }

"$CLIO" bench nfs --quick --json >"$tmp/nfs.json" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio bench nfs exited $?"; }
python3 - "$tmp/nfs.json" <<'PY' || fail "the table's shape (above)"
import json, sys
doc = json.load(open(sys.argv[1]))
ex = doc["experiments"]
assert len(ex) == 1 and ex[0]["experiment"] == "nfs", ex
rows = ex[0]["rows"]
want = {(c, t, s) for c in ("test5 write", "test5 read", "open-heavy pass 1",
                             "open-heavy later")
        for t in (0, 1, 5) for s in ("plain libnfs", "close-to-open", "lease")}
got = {(r["case"], r["rtt_ms"], r["system"]) for r in rows}
assert got == want and len(rows) == len(want), sorted(got ^ want)
by = {(r["case"], r["rtt_ms"], r["system"]): r for r in rows}
for r in rows:
    assert isinstance(r["seconds"], (int, float)) and r["seconds"] > 0, r
    for k in ("write_rpcs", "read_rpcs", "commit_rpcs", "getattr_rpcs",
              "lookup_rpcs", "access_rpcs", "other_rpcs"):
        assert isinstance(r[k], (int, float)) and r[k] >= 0, (k, r)
    if not r["case"].startswith("open-heavy"):
        assert r["mbs"] > 0, r
        if r["system"] != "plain libnfs":
            p = by[(r["case"], r["rtt_ms"], "plain libnfs")]
            q = r["mbs"] / p["mbs"]
            assert abs(r["ratio"] - q) <= 0.01 * q, ("ratio", r, p)
    if r["rtt_ms"] == 1 and r["target"] != "-":
        assert r["met"] in ("yes", "NO"), r
    print("ok: %s at %g ms, %s: %.3f s" % (r["case"], r["rtt_ms"], r["system"], r["seconds"]))
assert by[("test5 write", 1, "plain libnfs")]["write_rpcs"] == 128, "plain: a WRITE per 8 KiB"
assert by[("test5 read", 1, "plain libnfs")]["read_rpcs"] == 128, "plain: a READ per 8 KiB"
lease = by[("open-heavy later", 1, "lease")]
assert lease["getattr_rpcs"] == 0, ("lease: GETATTR on later opens", lease)
print("ok: %d rows; lease: no GETATTR on later opens" % len(rows))
PY

# A reader that goes away (| head -n 1 of its progress lines) must not
# kill the run before it stops its server: no process of the run (found
# by a mark in their environment) is left.
tag=clio-test-bench-nfs-$$
# tagged: the pids whose environment holds the mark
tagged() {
	for d in /proc/[0-9]*; do
		{ tr '\0' '\n' <"$d/environ"; } 2>/dev/null | grep -qx "CLIO_TEST_MARK=$tag" &&
			echo "${d#/proc/}"
	done
	true
}
CLIO_TEST_MARK=$tag "$CLIO" bench nfs --quick 2>&1 >/dev/null | head -n 1 >"$tmp/first"
sleep 1
left=$(tagged)
if [ -n "$left" ]; then
	for p in $left; do echo "    left: $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" >&2; done
	kill $left 2>/dev/null
	fail "clio bench nfs left its processes behind after its reader went away"
fi
grep -q "clio bench: nfs:" "$tmp/first" || fail "no progress line: $(cat "$tmp/first")"
echo "ok: its reader gone, the run still stops its server"
exit 0
