#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-lib-symbols.sh - the installed libclio.so and libclio.a define
# exactly the public calls of clio.h as globals (clio_*, nothing else), the
# shared library has the soname libclio.so.0, and a program with its own
# parse_size, getblk, ... links against either and gets its own.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/lib/common.sh"

root=$tmp/root
install_tree "$root"
use_tree "$root"

# the public calls, as the header declares them
sed -n '/^typedef/d; s/^[a-z].*[ *]\(clio_[a-z0-9_]*\)(.*/\1/p' "$src/include/clio.h" |
	sort > "$tmp/public"
[ "$(wc -l < "$tmp/public")" -ge 30 ] || fail "only $(wc -l < "$tmp/public") calls found in clio.h"

so=$(readlink -f "$libdir/libclio.so")
case $(basename "$so") in
libclio.so.0.*.*) ;;
*) fail "libclio.so points to $(basename "$so"), not libclio.so.0.N.M";;
esac
readelf -d "$so" | grep -q 'SONAME.*\[libclio\.so\.0\]' || fail "soname of $so is not libclio.so.0"
[ "$(readlink "$libdir/libclio.so.0")" = "$(basename "$so")" ] || fail "libclio.so.0 does not point to $so"

nm -D --defined-only "$so" | awk '{ print $NF }' | sort > "$tmp/so-globals"
nm -g --defined-only "$libdir/libclio.a" | awk 'NF == 3 { print $3 }' | sort > "$tmp/a-globals"
for lib in so a; do
	if ! cmp -s "$tmp/public" "$tmp/$lib-globals"; then
		echo "libclio.$lib: - declared in clio.h, not defined; + defined, not declared:" >&2
		diff "$tmp/public" "$tmp/$lib-globals" | grep '^[<>]' | sed 's/^</-/; s/^>/+/' >&2
		fail "libclio.$lib does not define exactly the public calls"
	fi
	echo "ok: libclio.$lib defines the $(wc -l < "$tmp/public") public calls and nothing else"
done
# the internal functions are still there, as locals
nm "$libdir/libclio.a" | grep -q ' t parse_size$' || fail "libclio.a: parse_size is not a local"

for kind in shared static; do
	build_program "$tmp/own-$kind" "$src/tests/lib/own-symbols.c" $kind cc \
		-std=c11 -Wall -Wextra -Werror || { echo "skip: no static programs under a sanitizer"; continue; }
	LD_LIBRARY_PATH=$libdir "$tmp/own-$kind" > "$tmp/own.out" || fail "own-symbols ($kind) failed"
	[ "$(cat "$tmp/own.out")" = "libclio read 'hello'; own: 4 42 7 mine 42 99" ] ||
		fail "own-symbols ($kind): $(cat "$tmp/own.out")"
	echo "ok: a program with its own parse_size, getblk, ... links against libclio ($kind)"
done
