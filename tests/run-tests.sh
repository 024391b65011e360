#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Run every test of one build flavour with a time limit each, and print
# the closing line "N passed, N failed, N skipped".
#   tests/run-tests.sh BUILD_DIR FLAVOUR     (FLAVOUR: plain, asan, tsan)
# Unit tests are the binaries in BUILD_DIR/tests; end-to-end tests are
# tests/test-*.sh, run with CLIO set to BUILD_DIR/clio.  Under tsan only
# the tests named in tests/tsan.list run.  Exit status 77 means skipped.
BUILD=${1:-build}
FLAVOUR=${2:-plain}
LIMIT=${TEST_TIMEOUT:-300}
pass=0 fail=0 skip=0 failed=""
here=$(cd "$(dirname "$0")" && pwd)
export CLIO="$(cd "$BUILD" && pwd)/clio"
export CLIO_FLAVOUR="$FLAVOUR"

selected() {
	[ "$FLAVOUR" != tsan ] && return 0
	grep -qx "$1" "$here/tsan.list"
}

run_one() {
	name=$1; shift
	selected "$name" || return 0
	start=$(date +%s)
	out=$(timeout "$LIMIT" "$@" 2>&1)
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0)  pass=$((pass + 1)); echo "PASS: $name (${secs}s)";;
	77) skip=$((skip + 1)); echo "SKIP: $name: $(echo "$out" | tail -n 1)";;
	*)  fail=$((fail + 1)); failed="$failed $name"
	    echo "FAIL: $name (exit $rc, ${secs}s)"; echo "$out" | tail -n 40 | sed 's/^/    /';;
	esac
}

for t in "$BUILD"/tests/test-*; do
	[ -x "$t" ] || continue
	run_one "$(basename "$t")" "$t"
done
for t in "$here"/test-*.sh; do
	[ -f "$t" ] || continue
	run_one "$(basename "$t")" sh "$t"
done

echo "[$FLAVOUR]${failed:+ failed:$failed}"
echo "$pass $fail $skip" > "$BUILD/test-summary"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
