#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Run every test of one build flavour with a time limit each, and print
# the closing line "N passed, N failed, N skipped".
#   tests/run-tests.sh BUILD_DIR FLAVOUR     (FLAVOUR: plain, asan, tsan)
# Unit tests are the binaries in BUILD_DIR/tests; end-to-end tests are
# tests/test-*.sh, run with CLIO set to BUILD_DIR/clio.  Under tsan only
# the tests named in tests/tsan.list run.  Exit status 77 means skipped.
#
# TEST_JOBS tests run at once (default: one per core, at most 2): each
# test has its own temporary directory, and the ones with servers their
# own network and mount namespace.  The tests named in tests/serial.list
# (they time something in wall-clock seconds, or load both cores) run
# afterwards, one at a time.  TEST_TIMEOUT bounds each test (300 s).
# A test's line is printed when it ends; the output of each failed test
# is printed again before the closing line.
if [ "${1:-}" = --one ]; then
	# one test: NAME; its line on stdout, rc and output under $results
	name=$2
	case $name in
	*.sh) set -- sh "$here/$name";;
	*)    set -- "$BUILD/tests/$name";;
	esac
	start=$(date +%s)
	timeout "$LIMIT" "$@" >"$results/$name.out" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	echo "$rc" >"$results/$name.rc"
	case $rc in
	0)  echo "PASS: $name (${secs}s)";;
	77) echo "SKIP: $name: $(tail -n 1 "$results/$name.out")";;
	*)  echo "FAIL: $name (exit $rc, ${secs}s)";;
	esac
	exit 0
fi

BUILD=${1:-build}
FLAVOUR=${2:-plain}
LIMIT=${TEST_TIMEOUT:-300}
here=$(cd "$(dirname "$0")" && pwd)
jobs=${TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -gt 2 ] 2>/dev/null && jobs=2
[ "$jobs" -ge 1 ] 2>/dev/null || { echo "TEST_JOBS=$jobs: not a number of jobs" >&2; exit 64; }
BUILD=$(cd "$BUILD" && pwd)
export CLIO="$BUILD/clio"
export CLIO_FLAVOUR="$FLAVOUR"
results=$(mktemp -d "${TMPDIR:-/tmp}/clio-results.XXXXXX") || exit 70
trap 'rm -rf "$results"' EXIT
export BUILD LIMIT here results

selected() {
	[ "$FLAVOUR" != tsan ] && return 0
	grep -qx "$1" "$here/tsan.list"
}

# The unit tests first: a few of them are among the longest (test-tier,
# test-probe), and a long test started last leaves a core idle at the end.
: >"$results/pool"
: >"$results/serial"
for t in "$BUILD"/tests/test-* "$here"/test-*.sh; do
	case $t in
	*.sh) [ -f "$t" ] || continue;;
	*)    [ -x "$t" ] || continue;;
	esac
	name=$(basename "$t")
	selected "$name" || continue
	if grep -qx "$name" "$here/serial.list"; then
		echo "$name" >>"$results/serial"
	else
		echo "$name" >>"$results/pool"
	fi
done

xargs -r -P "$jobs" -n 1 sh "$here/run-tests.sh" --one <"$results/pool"
xargs -r -P 1 -n 1 sh "$here/run-tests.sh" --one <"$results/serial"

pass=0 fail=0 skip=0 failed=""
for name in $(cat "$results/pool" "$results/serial"); do
	rc=$(cat "$results/$name.rc" 2>/dev/null || echo 70)
	case $rc in
	0)  pass=$((pass + 1));;
	77) skip=$((skip + 1));;
	*)  fail=$((fail + 1)); failed="$failed $name"
	    echo "---- $name (exit $rc), the last 40 lines of its output:"
	    tail -n 40 "$results/$name.out" | sed 's/^/    /';;
	esac
done

echo "[$FLAVOUR]${failed:+ failed:$failed}"
echo "$pass $fail $skip" > "$BUILD/test-summary"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
