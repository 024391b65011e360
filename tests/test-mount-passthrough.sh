#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-passthrough.sh - clio mount of a directory: a 100 MiB copy,
# dd rewrites at 1k, 4k, 64k and 1M (buffered and O_DIRECT) checked in the
# source directory after unmount, a tar extraction diffed against the
# original, name operations (mv, ln, ln -s, rm, mkdir, rmdir, chmod,
# touch) seen on both sides, O_TRUNC on open, and write + fsync + read
# back through another descriptor.
set -e
. "$(dirname "$0")/mount-common.sh"
here=$(cd "$(dirname "$0")" && pwd)
src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt"
head -c 100M /dev/urandom >"$tmp/big"
head -c 3000000 /dev/urandom >"$tmp/pat"

mount_start "$src" "$mnt" -o bsize=64k,cache_size=64M,maxphys=1M

# ------------------------------------------------------------ big copy
cp "$tmp/big" "$mnt/big"
cmp "$tmp/big" "$mnt/big" || fail "100 MiB copy differs through the mount"
[ "$(stat -c %s "$mnt/big")" -eq 104857600 ] || fail "size of big"

# ------------------------------------------------- rewrites at each bs
cp "$tmp/big" "$tmp/want"
seek=0
for bs in 1k 4k 64k 1M; do
	for flag in "" oflag=direct; do
		dd if="$tmp/pat" of="$mnt/big" bs=$bs seek=$seek conv=notrunc \
			$flag 2>/dev/null || fail "dd bs=$bs $flag"
		dd if="$tmp/pat" of="$tmp/want" bs=$bs seek=$seek conv=notrunc \
			2>/dev/null
		seek=$((seek + 7))
	done
done
dd if="$mnt/big" iflag=direct bs=1M 2>/dev/null | cmp - "$tmp/want" ||
	fail "O_DIRECT read differs"
cmp "$mnt/big" "$tmp/want" || fail "rewrites differ through the mount"

# ---------------------------------------------------------------- tar
(cd "$here/.." && tar cf - lib tests/unit) | (cd "$mnt" && tar xf -)
diff -r "$here/../lib" "$mnt/lib" || fail "tar: lib differs"
diff -r "$here/unit" "$mnt/tests/unit" || fail "tar: tests/unit differs"

# ------------------------------------------------------ name operations
mkdir "$mnt/d"
[ -d "$src/d" ] || fail "mkdir not in source"
echo one >"$mnt/d/f"
[ "$(cat "$src/d/f")" = one ] || fail "new file not in source"
mv "$mnt/d/f" "$mnt/d/g"
[ -e "$src/d/f" ] && fail "mv: old name still in source"
[ "$(cat "$src/d/g")" = one ] || fail "mv: new name not in source"
ln "$mnt/d/g" "$mnt/hard"
[ "$(stat -c %h "$mnt/hard")" -eq 2 ] || fail "ln: link count through mount"
[ "$(stat -c %i "$src/hard")" = "$(stat -c %i "$src/d/g")" ] || fail "ln: not a hard link in source"
ln -s d/g "$mnt/soft"
[ "$(readlink "$mnt/soft")" = d/g ] || fail "readlink through mount"
[ "$(readlink "$src/soft")" = d/g ] || fail "symlink not in source"
[ "$(cat "$mnt/soft")" = one ] || fail "reading through a symlink"
chmod 640 "$mnt/hard"
[ "$(stat -c %a "$src/d/g")" = 640 ] || fail "chmod not in source"
[ "$(stat -c %a "$mnt/d/g")" = 640 ] || fail "chmod not through mount"
touch -d 2001-02-03T04:05:06 "$mnt/hard"
[ "$(stat -c %Y "$src/hard")" = "$(date -d 2001-02-03T04:05:06 +%s)" ] || fail "touch not in source"
touch "$mnt/empty"
[ -f "$src/empty" ] && [ ! -s "$src/empty" ] || fail "touch did not create"
rm "$mnt/hard" "$mnt/soft" "$mnt/empty"
[ -e "$src/hard" ] || [ -e "$src/soft" ] || [ -e "$src/empty" ] && fail "rm: still in source"
rm "$mnt/d/g"
rmdir "$mnt/d"
[ -e "$src/d" ] && fail "rmdir: still in source"
rmdir "$mnt/d" 2>/dev/null && fail "rmdir of a missing directory worked"
# truncate through the cache
head -c 100000 "$tmp/pat" >"$mnt/t"
truncate -s 5000 "$mnt/t"
[ "$(stat -c %s "$mnt/t")" -eq 5000 ] || fail "truncate: size through mount"
cmp -n 5000 "$tmp/pat" "$mnt/t" || fail "truncate: data"
# O_TRUNC on open (the shell's >) empties an existing file, also in the
# cache: the old data must not come back when the file grows again
seq 1 100000 >"$mnt/o"
echo hi >"$mnt/o"
[ "$(cat "$mnt/o")" = hi ] || fail "O_TRUNC: $(head -c 20 "$mnt/o")"
truncate -s 1000 "$mnt/o"
[ "$(tail -c +4 "$mnt/o" | tr -d '\0' | wc -c)" -eq 0 ] || fail "O_TRUNC: old data came back"

# --------------------------------------- write, fsync, read back elsewhere
if command -v python3 >/dev/null 2>&1; then
	python3 - "$mnt/py" <<'PY' || fail "python write/fsync/read"
import os, sys
p = sys.argv[1]
data = os.urandom(300000)
w = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
assert os.write(w, data) == len(data)
os.fsync(w)
r = os.open(p, os.O_RDONLY)
got = b""
while True:
    b = os.read(r, 65536)
    if not b:
        break
    got += b
assert got == data, "read back differs"
os.pwrite(w, b"x" * 10, 5)
assert os.pread(r, 20, 0) == data[:5] + b"x" * 10 + data[15:20]
d = os.open(p, os.O_RDONLY | os.O_DIRECT)
os.close(d)
os.close(r); os.close(w)
PY
else
	dd if="$tmp/pat" of="$mnt/py" bs=64k conv=fsync 2>/dev/null
	cmp "$tmp/pat" "$mnt/py" || fail "dd write/fsync/read"
fi

mount_stop "$mnt"
cmp "$src/big" "$tmp/want" || fail "source file differs after unmount"
diff -r "$here/../lib" "$src/lib" || fail "source lib differs after unmount"
[ "$(head -c 3 "$src/o")" = hi ] && [ "$(stat -c %s "$src/o")" -eq 1000 ] &&
	[ "$(tail -c +4 "$src/o" | tr -d '\0' | wc -c)" -eq 0 ] || fail "O_TRUNC: source after unmount"
exit 0
