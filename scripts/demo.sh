#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# make demo: the seeds' experiments on the calibrated simulated disks,
# each beside the figures the seed published, then clio against the Linux
# kernel on a small temporary file, and the library's core against its
# peers (clio bench core).  Plots go to build/plots.
#   scripts/demo.sh PATH_TO_CLIO
set -e
CLIO=${1:-build/clio}
plots=$(dirname "$CLIO")/plots

echo "clio demo: the seed experiments on the calibrated simulated disks"
echo "(virtual clock: simulated seconds, the same on every machine)"
echo
if command -v gnuplot >/dev/null 2>&1; then
	"$CLIO" bench all --quick --plot "$plots"
	echo "Plots (PNG and SVG): $plots/"
else
	"$CLIO" bench all --quick
	echo "(gnuplot is not installed: no plots)"
fi
echo "Full runs: 'make bench' writes bench/RESULTS.md; see clio(1) for clio dd and clio bench."
