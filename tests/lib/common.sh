# SPDX-License-Identifier: BSD-2-Clause
# common.sh - what the tests of the installed library share.  Source it
# after tests/functions.sh:
#   . "$(dirname "$0")/lib/common.sh"
# It sets $src (the source tree), $build (the build directory of $CLIO) and
# $san (the sanitizer flags of $CLIO_FLAVOUR, as the Makefile's check-asan
# and check-tsan use them), and defines install_tree, use_tree,
# build_program and check_examples.
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$(dirname "$CLIO")" && pwd)
case ${CLIO_FLAVOUR:-plain} in
asan) san="-fsanitize=address,undefined -fno-sanitize-recover=all";;
tsan) san="-fsanitize=thread";;
*)    san="";;
esac

# install_tree ROOT: make install of $build into ROOT with PREFIX=/usr.
install_tree() {
	make -s -C "$src" BUILD="$build" DESTDIR="$1" PREFIX=/usr install \
		>"$tmp/install.log" 2>&1 || { cat "$tmp/install.log" >&2; fail "make install"; }
}

# use_tree ROOT: pkg-config finds only the clio.pc under ROOT, with its
# paths moved into ROOT.  Sets $libdir to the directory of libclio.so.
use_tree() {
	pc=$(find "$1" -name clio.pc | head -n 1)
	[ -n "$pc" ] || fail "no clio.pc under $1"
	PKG_CONFIG_LIBDIR=$(dirname "$pc")
	PKG_CONFIG_PATH=""
	PKG_CONFIG_SYSROOT_DIR=$1
	export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
	libdir=$(pkg-config --variable=libdir clio) || fail "pkg-config clio"
	# pkgconf puts the sysroot in front of variables, pkg-config does not
	case $libdir in "$1"/*) ;; *) libdir=$1$libdir;; esac
	[ -e "$libdir/libclio.so" ] || fail "no libclio.so in $libdir"
}

# build_program OUT SOURCE shared|static [CC [FLAGS...]]: compile SOURCE with
# nothing but what pkg-config says, against libclio.so or libclio.a.  The
# static build is fully static, except under a sanitizer (which cannot be),
# where it is not built and build_program returns 1.
build_program() {
	out=$1 source=$2 kind=$3
	shift 3
	compiler=${1:-cc}
	[ $# -gt 0 ] && shift
	if [ "$kind" = static ]; then
		[ -z "$san" ] || return 1
		# shellcheck disable=SC2046,SC2086
		$compiler "$@" -static -o "$out" "$source" \
			$(pkg-config --static --cflags --libs clio) ||
			fail "cannot build $source against libclio.a"
		readelf -d "$out" | grep -q NEEDED && fail "$out is not static"
	else
		# shellcheck disable=SC2046,SC2086
		$compiler "$@" $san -o "$out" "$source" $(pkg-config --cflags --libs clio) ||
			fail "cannot build $source against libclio.so"
		readelf -d "$out" | grep -q 'NEEDED.*libclio\.so\.0' ||
			fail "$out does not use libclio.so.0"
	fi
	return 0
}

# check_examples ROOT: build examples/ against the library under ROOT, as
# a shared and as a static program, and check what they do.
check_examples() {
	use_tree "$1"
	head -c 3000000 /dev/urandom > "$tmp/source" || fail "no random source file"
	for kind in shared static; do
		build_program "$tmp/copy-$kind" "$src/examples/copy.c" $kind cc \
			-std=c11 -Wall -Wextra -pedantic -Werror -O2 ||
			{ echo "skip: no static programs under a sanitizer"; continue; }
		build_program "$tmp/readers-$kind" "$src/examples/readers.c" $kind cc \
			-std=c11 -Wall -Wextra -pedantic -Werror -O2
		rm -f "$tmp/copy"
		LD_LIBRARY_PATH=$libdir "$tmp/copy-$kind" "$tmp/source" "$tmp/copy" \
			> "$tmp/copy.out" || fail "copy ($kind) failed"
		cmp "$tmp/source" "$tmp/copy" || fail "copy ($kind): the copy differs"
		grep -q "^copied 3000000 bytes in 733 reads and writes of 4096 bytes" "$tmp/copy.out" ||
			fail "copy ($kind): $(head -n 1 "$tmp/copy.out")"
		# 733 application reads reach the file in a few large ones
		asked=$(sed -n 's/^source asked: \([0-9]*\) reads.*/\1/p' "$tmp/copy.out")
		issued=$(sed -n 's/^source issued: \([0-9]*\) reads.*/\1/p' "$tmp/copy.out")
		in_range "copy ($kind): source reads asked" "$asked" 733 733
		in_range "copy ($kind): source reads issued" "$issued" 1 50
		LD_LIBRARY_PATH=$libdir "$tmp/readers-$kind" "$tmp/pattern" 4 8 \
			> "$tmp/readers.out" || fail "readers ($kind): $(cat "$tmp/readers.out")"
		grep -q "^readers: 4 threads read [0-9]* bytes of a 8388608-byte file, 0 bad bytes, 0 errors" \
			"$tmp/readers.out" || fail "readers ($kind): $(head -n 1 "$tmp/readers.out")"
		# the file it wrote holds the pattern: the word at 98760 is 98760 ^ "clio"
		word=$(od -A n -t x8 -j 98760 -N 8 "$tmp/pattern" | tr -d ' ')
		[ "$word" = 636c696f000181c8 ] || fail "readers ($kind): word at 98760 is $word"
		[ "$(wc -c < "$tmp/pattern")" -eq 8388608 ] || fail "readers ($kind): pattern file size"
		echo "ok: examples against libclio ($kind)"
	done
}
