#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-threads.sh - several threads of one process on one nfs:// file
# at once, against NFS-Ganesha in the test's own namespace
# (tests/tools/nfsthreads): each thread writes, reads back and flushes its
# own region, the last one also truncates and grows the file's end, once
# through the cache (regions not a multiple of the block size, so that
# blocks are shared) and once on the device itself; every read returns
# what its thread wrote, and the export's file equals the model byte for
# byte after the last flush.  Runs under TSan too.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"

seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
fail() { echo "FAIL: $* (SEED=$seed)" >&2; exit 1; }
echo "seed $seed"
tool=$(dirname "$CLIO")/tests/tools/nfsthreads
[ -x "$tool" ] || fail "$tool not built (make tests)"

ganesha_start
threads=4
for mode in cache dev; do
	region=$([ $mode = cache ] && echo 300007 || echo 262144)
	head -c $((threads * region)) /dev/urandom >"$export/f"
	cp "$export/f" "$tmp/initial"
	"$tool" $mode "nfs://127.0.0.1$export/f?qd=8" "$tmp/initial" "$tmp/model" \
		$threads $region 120 "$seed" 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "$mode: nfsthreads"; }
	size=$(stat -c %s "$export/f")
	[ "$size" -le $((threads * region)) ] || fail "$mode: the file grew to $size"
	head -c "$size" "$tmp/model" | cmp - "$export/f" ||
		fail "$mode: the export's file differs from the model"
	tail -c +$((size + 1)) "$tmp/model" | tr -d '\0' | [ "$(wc -c)" -eq 0 ] ||
		fail "$mode: the model has data past the file's end ($size)"
	echo "ok: $mode: $threads threads, 120 operations each, the file ($size bytes) as the model"
done
exit 0
