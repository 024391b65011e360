#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-fsx.sh - the model-based random test through clio mount:
# tests/tools/mountfsx (built by `make tests` beside clio) runs seeded
# random pwrite, pread, ftruncate, fsync, reopen (several descriptors,
# O_DIRECT ones too) on a file of the mount with ordinary system calls,
# checking every result against an in-memory shadow.
#  - pass-through mounts of a directory with small caches that keep
#    evicting (bsize=4k,cache_size=1M,maxphys=64k and bsize=64k,
#    cache_size=4M), each with the kernel's writeback cache off and on:
#    one file per seed, the seeds running at once; after a clean unmount
#    each file in the source directory must equal its shadow (mountfsx -o);
#  - device mounts (mem:size=16M, sim:preset=ssd,size=16M on its virtual
#    clock, and an image file with kernel_cache=off, compared after
#    unmount too): the single file disk, fixed size (mountfsx -f).
# Seeds: CLIO_SEED="S1 S2 ..." (default a fixed list); ops per run:
# CLIO_FSX_OPS.  A failure prints the seed, the mount, the op log and
# the command that repeats it.
set -e
. "$(dirname "$0")/mount-common.sh"
fsx=${MOUNTFSX:-$(dirname "$CLIO")/tests/tools/mountfsx}
[ -x "$fsx" ] || fail "$fsx is missing (make tests builds it)"
seeds=${CLIO_SEED:-"1001 2002 3003"}
ops=${CLIO_FSX_OPS:-3000}
[ "${CLIO_FLAVOUR:-plain}" = asan ] && ops=$((ops / 3))
fsx_flags=
src=$tmp/src mnt=$tmp/mnt img=$tmp/img
mkdir "$src" "$mnt"

# run_fsx WHAT SEED ARGS...: mountfsx -s SEED ARGS, its output in
# $tmp/log.SEED; fail with that output if it fails.
run_fsx() {
	what=$1 seed=$2
	shift 2
	if ! "$fsx" -s "$seed" -n "$ops" $fsx_flags "$@" >"$tmp/log.$seed" 2>&1; then
		cat "$tmp/log.$seed" >&2
		# the daemon's complaints (a sanitizer's report) say why
		sleep 1
		tail -n 60 "$tmp/mount.err" >&2
		fail "$what: seed $seed (repeat with CLIO_SEED=$seed)"
	fi
	echo "ok: $what: $(tail -n 1 "$tmp/log.$seed")"
}

# pass-through: the seeds at once, one file each, then unmount and cmp
for o in kernel_cache=off,bsize=4k,cache_size=1M,maxphys=64k \
	kernel_cache=off,bsize=64k,cache_size=4M \
	kernel_cache=on,bsize=4k,cache_size=1M,maxphys=64k \
	kernel_cache=on,bsize=64k,cache_size=4M; do
	mount_start "$src" "$mnt" -o "$o"
	pids=
	for s in $seeds; do
		run_fsx "pass-through -o $o" "$s" -d -o "$tmp/want.$s" "$mnt/f.$s" &
		pids="$pids $!"
	done
	rc=0
	for p in $pids; do
		wait "$p" || rc=1
	done
	[ "$rc" -eq 0 ] || exit 1
	mount_stop "$mnt"
	for s in $seeds; do
		cmp "$tmp/want.$s" "$src/f.$s" ||
			fail "pass-through -o $o: seed $s: the source file differs after unmount"
	done
	rm -f "$src"/f.*
done

# device mode: the seeds one after another on one disk
for d in mem:size=16M sim:preset=ssd,size=16M; do
	mount_start "$d" "$mnt" -o bsize=16k,cache_size=2M,maxphys=128k
	for s in $seeds; do
		run_fsx "$d" "$s" -f -d "$mnt/disk"
	done
	mount_stop "$mnt"
done

head -c 16M /dev/urandom >"$img"
mount_start "$img" "$mnt" -o kernel_cache=off,bsize=4k,cache_size=1M,maxphys=64k
for s in $seeds; do
	run_fsx "image file" "$s" -f -d -o "$tmp/want" "$mnt/disk"
done
mount_stop "$mnt"
cmp "$tmp/want" "$img" || fail "image file: differs from the shadow after unmount"
exit 0
