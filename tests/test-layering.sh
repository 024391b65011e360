#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-layering.sh - the layers as the README's map draws them, checked in
# the source: front ends (cli/, fuse/, bench/, nbdkit/, examples/,
# tests/tools/) include the
# public header and lib/util.h only; the cache (file.c, cache.c,
# cluster.c, consist.c) reads no field of the device object; nothing in
# lib/ outside the device backends moves data with read(2)/write(2) and
# their kin; every source file of lib/ and the front ends is named in the
# map.
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=1; }

for f in cli/*.[ch] fuse/*.[ch] bench/*.[ch] nbdkit/*.c examples/*.c tests/tools/*.c; do
	[ -f "$f" ] || continue
	grep -nE '#include "(internal|dev|cache|uring)\.h"' "$f" &&
		bad "$f includes a header of the library's internals"
done
echo "ok: front ends include clio.h and util.h only"

for f in lib/file.c lib/cache.c lib/cluster.c lib/consist.c; do
	grep -nE '(o_dev|[^a-z_]d)->(ops|priv|sector|size|maxio|queue_depth|blocking|is_virtual|readonly|lock)\b' "$f" &&
		bad "$f reads a field of the device object"
done
echo "ok: the cache uses the device through its calls only"

for f in lib/*.c; do
	grep -nE '(^|[^_a-z])(pread|pwrite|preadv|pwritev|preadv2|pwritev2|read|write|fsync|fdatasync)\(' "$f" &&
		bad "$f moves data itself (only lib/dev/ backends may)"
done
echo "ok: every byte to storage goes through a backend"

# the map: its section, up to the next heading
map=$(awk '/^## / { on = /^## Map of the source/ } on { print }' README.md)
for f in lib/*.c lib/*.h lib/dev/*.c cli/*.c fuse/*.c bench/*.c nbdkit/*.c; do
	printf '%s\n' "$map" | grep -q "$(basename "$f")" ||
		bad "$f is not in the README's map"
done
[ "$fail" -eq 0 ] && echo "ok: the README's map names every source file"
[ "$fail" -eq 0 ]
