#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-lib-header.sh - the installed clio.h compiles without a warning
# (-Werror) as C99 and C11 (-pedantic -Wall -Wextra) and as C++11, C++17 and
# C++20 (g++ -pedantic -Wall -Wextra); in each, CLIO_CONF_DEFAULTS gives
# the values clio_conf_init() sets, the same in every language, and the
# version macros agree with clio_version().  Then clio --version and
# clio version print CLIO_VERSION.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/lib/common.sh"

command -v g++ >/dev/null || { echo "no g++ (make deps installs it)"; exit 77; }
install_tree "$tmp/root"
use_tree "$tmp/root"
prog=$src/tests/lib/header-check.c
warn="-Wall -Wextra -pedantic -Werror"
for std in c99 c11 c++11 c++17 c++20; do
	case $std in
	c++*) build_program "$tmp/h-$std" "$prog" shared g++ -x c++ -std="$std" $warn;;
	*)    build_program "$tmp/h-$std" "$prog" shared cc -std="$std" $warn;;
	esac
	LD_LIBRARY_PATH=$libdir "$tmp/h-$std" > "$tmp/$std.out" || fail "$std: the program failed"
	macro=$(sed -n 's/^macro: //p' "$tmp/$std.out")
	call=$(sed -n 's/^call: //p' "$tmp/$std.out")
	[ -n "$macro" ] && [ "$macro" = "$call" ] ||
		fail "$std: CLIO_CONF_DEFAULTS is '$macro', clio_conf_init() sets '$call'"
	[ "$std" = c99 ] || [ "$macro" = "$(sed -n 's/^macro: //p' "$tmp/c99.out")" ] ||
		fail "$std: CLIO_CONF_DEFAULTS differs from C's: $macro"
	echo "ok: clio.h as $std: no warning, CLIO_CONF_DEFAULTS = clio_conf_init()"
done
grep -q '^macro: bsize=16384 .* flush_behind=0$' "$tmp/c99.out" ||
	fail "defaults: $(cat "$tmp/c99.out")"

version=$(sed -n 's/^version: //p' "$tmp/c99.out")
for arg in --version version; do
	[ "$("$CLIO" $arg)" = "clio $version" ] || fail "clio $arg says '$("$CLIO" $arg)', not 'clio $version'"
done
echo "ok: clio --version and clio version say clio $version"
