#!/bin/sh
# make demo: the seed experiments on the simulated disks, side by side
# with the figures the seeds published.
#   scripts/demo.sh PATH_TO_CLIO
set -e
CLIO=${1:-build/clio}

# jget JSON KEY: the first number stored under "KEY".
jget() {
	printf '%s\n' "$1" | sed -n "s/.*\"$2\": \([-0-9.e+]*\).*/\1/p" | head -n 1
}

echo "clio demo: the seed experiments on the calibrated simulated disks"
echo "(virtual clock: simulated seconds, the same on every machine)"
echo

echo "Seed 000 - NetBSD PR kern/1718 (1995): MAXBSIZE too low"
echo "  dd if=/dev/zero of=sim:preset=rz25 bs=1M count=86 conv=fsync, 8K blocks, cluster=lite"
printf '  %-10s %12s %12s %8s %10s %8s\n' MAXBSIZE "published s" "clio s" ratio transfers KB/t
for m in 16k 64k; do
	j=$("$CLIO" dd if=/dev/zero of=sim:preset=rz25 bs=1M count=86 conv=fsync \
		--bsize=8k --cluster=lite --maxbsize=$m --json)
	el=$(jget "$j" elapsed_s)
	w=$(jget "$j" writes)
	wb=$(jget "$j" write_bytes)
	pub=105; [ $m = 64k ] && pub=52
	awk -v m=$m -v p=$pub -v e="$el" -v w="$w" -v b="$wb" 'BEGIN {
		printf "  %-10s %12d %12.1f %8.2f %10d %8.1f\n", m, p, e, e / p, w, b / 1024 / w }'
	eval "el_$m=$el"
done
awk -v a="$el_16k" -v b="$el_64k" 'BEGIN {
	printf "  16K/64K elapsed ratio: published %.2f, clio %.2f\n\n", 105 / 52, a / b }'

echo "Seed 002 - FreeBSD ffs_balloc.c (2002): partial-block rewrite"
echo "  dd if=/dev/zero of=sim:preset=da2002 bs=1k count=64k conv=notrunc, 8K blocks, maxphys 64K"
printf '  %-22s %8s %8s %8s   %8s %8s %8s\n' "" "KB/t" tps MB/s "pub KB/t" "pub tps" "pub MB/s"
for m in block cluster; do
	j=$("$CLIO" dd if=/dev/zero of=sim:preset=da2002 bs=1k count=64k conv=notrunc \
		--bsize=8k --maxphys=64k --rbw=$m --json)
	el=$(jget "$j" elapsed_s)
	r=$(jget "$j" reads); w=$(jget "$j" writes)
	rb=$(jget "$j" read_bytes); wb=$(jget "$j" write_bytes)
	if [ $m = block ]; then label="before (rbw=block)"; pk=14.21; pt=813; pm=11.19
	else label="after (rbw=cluster)"; pk=63.62; pt=434; pm=26.99; fi
	awk -v l="$label" -v e="$el" -v r="$r" -v w="$w" -v rb="$rb" -v wb="$wb" \
	    -v pk=$pk -v pt=$pt -v pm=$pm 'BEGIN {
		x = r + w; b = rb + wb
		printf "  %-22s %8.2f %8.0f %8.2f   %8.2f %8d %8.2f\n", l, b / 1024 / x, x / e, b / 1048576 / e, pk, pt, pm }'
done
echo
echo "Run 'clio dd ... --iostat=1' to watch any of these as iostat lines; see clio(1)."
