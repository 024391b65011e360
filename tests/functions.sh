# SPDX-License-Identifier: BSD-2-Clause
# functions.sh - what the end-to-end tests share.  Source it first:
#   . "$(dirname "$0")/functions.sh"
# It checks $CLIO, makes $tmp (removed on exit), and defines fail,
# json_num, in_range and running.
: "${CLIO:?CLIO must name the clio command}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }

# json_num KEY FILE: the first number after "KEY": in a one-device JSON line.
json_num() {
	sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1
}

# in_range NAME VALUE LO HI
in_range() {
	if awk -v v="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(v != "" && v + 0 >= lo && v + 0 <= hi) }'; then
		echo "ok: $1 = $2 in [$3, $4]"
	else
		fail "$1 = '$2', not in [$3, $4]"
	fi
}

# running PID: PID is a live process.  A daemon that ended is no child of
# the test: it stays a zombie, which kill -0 still finds, until init
# reaps it, which may take a second or more.  While it is reaped it
# shows X (dead) for a moment: not running either (a check that took Z
# for an end and X for a live process failed a test whose daemon ended).
running() {
	kill -0 "$1" 2>/dev/null || return 1
	state=$(sed -n 's/^State:[[:space:]]*\([A-Za-z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
	case $state in
	""|Z|X|x) return 1;;
	esac
	return 0
}
