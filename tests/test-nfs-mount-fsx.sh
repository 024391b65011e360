#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-mount-fsx.sh - the model-based random test (tests/tools/mountfsx:
# seeded pwrite, pread, ftruncate, fsync, reopens with and without O_TRUNC,
# O_DIRECT descriptors too) on a file of `clio mount nfs://...` against
# NFS-Ganesha, with a small cache that keeps evicting (bsize=4k,
# cache_size=1M, maxphys=64k) close-to-open and under lease; after the
# unmount the export's file equals the shadow.  Seeds: CLIO_SEED="S1 ..."
# (default a fixed list); ops per run: CLIO_FSX_OPS.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"
. "$(dirname "$0")/nfs-mount-common.sh"

fsx=${MOUNTFSX:-$(dirname "$CLIO")/tests/tools/mountfsx}
[ -x "$fsx" ] || fail "$fsx is missing (make tests builds it)"
seeds=${CLIO_SEED:-"1001 2002"}
ops=${CLIO_FSX_OPS:-1500}
[ "${CLIO_FLAVOUR:-plain}" = asan ] && ops=$((ops / 3))

ganesha_start
url="nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port"
m=$tmp/mnt
for o in bsize=4k,cache_size=1M,maxphys=64k bsize=16k,cache_size=4M,lease; do
	nfs_mount "$m" "$url" -o "$o"
	for s in $seeds; do
		if ! "$fsx" -s "$s" -n "$ops" -d -o "$tmp/want.$s" "$m/f.$s" >"$tmp/log" 2>&1; then
			cat "$tmp/log" >&2
			tail -n 40 "$m.err" >&2
			fail "-o $o: seed $s (repeat with CLIO_SEED=$s)"
		fi
		echo "ok: -o $o: seed $s: $(tail -n 1 "$tmp/log")"
	done
	nfs_umount "$m"
	for s in $seeds; do
		cmp "$tmp/want.$s" "$export/f.$s" ||
			fail "-o $o: seed $s: the export's file differs from the shadow after unmount"
	done
	rm -f "$export"/f.*
done
exit 0
