#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-rbd-fsx.sh - the random operation test (tests/unit/test-fsx.c) on
# an RBD image of a one-node Ceph cluster (tests/ceph-common.sh): every
# configuration of a short seeded run opens the image, empties it, and
# checks each read and, after fsync, the image itself against its model.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ceph-common.sh"

fsx="$(dirname "$CLIO")/tests/test-fsx"
[ -x "$fsx" ] || fail "$fsx not built (make tests)"
ceph_start 8M
seed=${CLIO_SEED:-$(date +%s)}
ops=${CLIO_FSX_OPS:-3000}
[ "${CLIO_FLAVOUR:-}" = plain ] || [ -n "${CLIO_FSX_OPS:-}" ] || ops=1200
[ "${CLIO_FLAVOUR:-}" = tsan ] && [ -z "${CLIO_FSX_OPS:-}" ] && ops=300
CLIO_SEED=$seed CLIO_FSX_OPS=$ops CLIO_FSX_DEV="$(ceph_uri)" "$fsx" >"$tmp/fsx.out" 2>&1 ||
	{ tail -n 40 "$tmp/fsx.out"; fail "test-fsx on $(ceph_uri) (CLIO_SEED=$seed CLIO_FSX_OPS=$ops)"; }
grep "seed .*ops" "$tmp/fsx.out"
n=$(grep -c "^fsx: config .* rbd:rbd/img" "$tmp/fsx.out")
[ "$n" -ge 10 ] || fail "only $n configurations ran on $(ceph_uri)"
echo "ok: test-fsx on rbd, seed $seed, $ops ops in $n configurations"
