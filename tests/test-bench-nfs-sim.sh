#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-bench-nfs-sim.sh - `clio bench nfs --sim`: seed 004's test5 in
# virtual time over nfs+sim:preset=seed2010.  The write rates fall inside
# the seed's published ranges (1.44-5.96 MB/s without delegations,
# 6.36-7.53 with), two runs print the same numbers, and the RPCs are what
# the engine must send: close-to-open a COMMIT per close and a GETATTR per
# open, the lease no GETATTR and one COMMIT at the end; clustering sends
# 64 KiB WRITEs (160, not test5's 1280 8 KiB writes).  clio info shows
# the model, its RPC counters and its disk.  (The run against a real
# server, without --sim, is test-bench-nfs.sh's.)
set -e
. "$(dirname "$0")/functions.sh"
command -v python3 >/dev/null 2>&1 || { echo "python3 not found"; exit 77; }

"$CLIO" bench nfs --sim --json >"$tmp/a.json" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio bench nfs --sim exited $?"; }
"$CLIO" bench nfs --sim --json >"$tmp/b.json" 2>>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio bench nfs --sim exited $? (second run)"; }
cmp -s "$tmp/a.json" "$tmp/b.json" ||
	fail "two runs differ: $(diff "$tmp/a.json" "$tmp/b.json")"
python3 - "$tmp/a.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ex = {e["experiment"]: e for e in doc["experiments"]}
assert set(ex) == {"nfs-sim"}, ex.keys()
rows = {r["case"].split()[0]: r for r in ex["nfs-sim"]["rows"]}
assert sorted(rows) == ["close-to-open", "lease"], rows.keys()
c, l = rows["close-to-open"], rows["lease"]
assert 1.44 <= c["write_mbs"] <= 5.96, ("close-to-open write MB/s", c)
assert 6.36 <= l["write_mbs"] <= 7.53, ("lease write MB/s", l)
assert abs(c["write_mbs"] - 10 * 2**20 / c["write_s"] / 1e6) < 0.01, c
for r in (c, l):
    assert r["write_in_range"] == "yes" and r["repeatable"] == "yes", r
    # clustering: 64 KiB WRITEs, each of the 10 passes' 1 MiB sent once
    assert r["rpc_write"] == 160, r
    assert r["rpc_setattr"] == 10, r          # creat(2)'s truncation
    assert r["rpc_read"] == 0, r              # the reads hit the cache
assert c["rpc_commit"] >= 10, c               # a COMMIT per close
assert c["rpc_getattr"] == 30, c              # 20 opens, 10 closes after writing
assert l["rpc_getattr"] == 0, l               # no revalidation under a lease
assert l["rpc_commit"] == 1, l                # only at the end
assert l["final_s"] > 0 and c["final_s"] == 0, (c, l)
assert c["read_s"] > 0, c                     # 10 GETATTR round trips
print("ok: write %.2f MB/s without, %.2f MB/s with delegations" % (c["write_mbs"], l["write_mbs"]))
PY

# the text form says the same
"$CLIO" bench nfs --sim >"$tmp/a.txt" || fail "clio bench nfs --sim (text) exited $?"
grep -q '1.44-5.96' "$tmp/a.txt" || fail "no published range in: $(cat "$tmp/a.txt")"
[ "$(grep -c ' yes  *yes$' "$tmp/a.txt")" = 2 ] || fail "not in range/repeatable: $(cat "$tmp/a.txt")"

# clio info: the model, its RPC counters and its disk's parameters
"$CLIO" info 'nfs+sim:preset=seed2010,size=1M' >"$tmp/info" || fail "clio info nfs+sim exited $?"
for want in 'type: *nfs+sim' 'clock: *virtual' 'maxio: *65536' 'preset=seed2010' 'rtt=0.3' \
	'bw=11.77' 'disk=ad2009' 'rpc_getattr=1' 'rpc_write=0' 'disk.rpm=7200' 'attr_size=1048576'; do
	grep -q "$want" "$tmp/info" || fail "clio info lacks '$want': $(cat "$tmp/info")"
done
rc=0
"$CLIO" info 'nfs+sim:preset=seed2010,bw=fast' 2>"$tmp/err" || rc=$?
[ "$rc" != 0 ] && grep -q "bad bw 'fast'" "$tmp/err" || fail "bad bw: rc $rc, $(cat "$tmp/err")"
echo "ok: clio info nfs+sim"

echo "ok: test-bench-nfs-sim"
