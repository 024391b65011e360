#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-consist.sh - clio mount of a directory and a source that
# others change (close-to-open consistency), and what a close owes:
#   kernel_cache=off: after the source is changed behind the mount's back
#     (append, overwrite in place with the same size and a new mtime,
#     truncate, replace by rename), while the mount's cache holds the old
#     data, a new open through the mount reads exactly the new bytes;
#   kernel_cache=on (the default): the same for an overwrite of the same
#     size (the kernel's writeback cache owns the size of a file it
#     knows, so only kernel_cache=off promises changes of size);
#   a change of the source while the mount holds the file open for
#     writing, made before the mount's own first write there: seen by the
#     opens after the writer's close (it was hidden for good, the version
#     the close recorded taken for the mount's own);
#   a file written through the mount and read back after its close is
#     not read again from the source (the storage's reads stay 0);
#   100 closes of files written through the mount flush the storage
#     never; fsync(1) and dd conv=fsync do.
set -e
. "$(dirname "$0")/mount-common.sh"
src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt"

val() { "$CLIO" stat --raw "$mnt" | sed -n "s/^$1: //p"; }
# same NAME WHAT: the mount reads NAME as the source holds it (every
# case is tried; the failures are counted in $bad)
bad=0
same() {
	cmp "$src/$1" "$mnt/$1" >/dev/null && return 0
	echo "FAIL: kernel_cache=$kc: $2: the mount reads old data" >&2
	bad=$((bad + 1))
}
# warm NAME: read it through the mount, so the cache holds it
warm() { cat "$mnt/$1" >/dev/null; }
# a new mtime, whatever the clock's granularity
later() { touch -d "@$(( $(date +%s) + $1 ))" "$src/$2"; }

for kc in off on; do
	rm -rf "$src"/*
	head -c 200000 /dev/urandom >"$src/a"
	head -c 200000 /dev/urandom >"$src/o"
	head -c 200000 /dev/urandom >"$src/t"
	head -c 200000 /dev/urandom >"$src/r"
	mount_start "$src" "$mnt" -o kernel_cache=$kc
	# held open across the reads and the changes, so that the cache
	# holds the old data however it treats a last close
	exec 3<"$mnt/a" 4<"$mnt/o" 5<"$mnt/t" 6<"$mnt/r"
	for f in a o t r; do warm $f; done
	# overwrite in place, same size, a new mtime
	dd if=/dev/urandom of="$src/o" bs=4096 count=8 seek=3 conv=notrunc 2>/dev/null
	later 10 o
	same o "overwrite in place (same size, new mtime)"
	if [ $kc = off ]; then
		head -c 5000 /dev/urandom >>"$src/a"
		same a "append"
		truncate -s 70000 "$src/t"
		same t "truncate"
		head -c 123456 /dev/urandom >"$tmp/new"
		mv "$tmp/new" "$src/r"
		same r "replace by rename"
		# and back to a cached one, changed again
		warm a
		head -c 3000 /dev/urandom >>"$src/a"
		same a "a second append"
	fi
	exec 3<&- 4<&- 5<&- 6<&-
	# closed: the buffers kept for the next open are checked too
	warm o
	later 20 o
	same o "overwrite after the last close"
	mount_stop "$mnt"
done
[ $bad -eq 0 ] || fail "$bad changes of the source not seen"

# changed behind the mount's back while open for writing there, before
# the mount's own write (elsewhere in the file): the close recorded the
# source's version as its own and every later open read the old data
for kc in off on; do
	rm -rf "$src"/*
	head -c 200000 /dev/urandom >"$src/c"
	mount_start "$src" "$mnt" -o kernel_cache=$kc
	exec 3<>"$mnt/c"
	warm c
	dd if=/dev/urandom of="$src/c" bs=4096 count=4 seek=30 conv=notrunc 2>/dev/null
	later 10 c
	# the mount's own write, at 0 through the open descriptor
	printf W >&3
	exec 3>&-
	cp "$src/c" "$tmp/c"
	printf W | dd of="$tmp/c" bs=1 conv=notrunc 2>/dev/null
	cmp "$tmp/c" "$src/c" || fail "kernel_cache=$kc: the source lacks a write"
	cmp "$tmp/c" "$mnt/c" >/dev/null || {
		echo "FAIL: kernel_cache=$kc: changed while open for writing there, before its own write: the mount reads old data" >&2
		bad=$((bad + 1))
	}
	mount_stop "$mnt"
done
[ $bad -eq 0 ] || fail "$bad changes of the source not seen"

# written through the mount, read back after the close: from the cache
rm -rf "$src"/*
mount_start "$src" "$mnt" -o kernel_cache=off
head -c 300000 /dev/urandom >"$tmp/w"
cp "$tmp/w" "$mnt/w"
cmp "$tmp/w" "$mnt/w" || fail "written file reads back wrong"
cmp "$tmp/w" "$mnt/w" || fail "written file reads back wrong the second time"
br=$(val total_back_reads)
[ "$br" -eq 0 ] || fail "a file written and read back was read from the source ($br reads)"
cmp "$tmp/w" "$src/w" || fail "the source differs from what was written"
mount_stop "$mnt"

# close(2) does not flush the storage; fsync does
for kc in on off; do
	mount_start "$src" "$mnt" -o kernel_cache=$kc
	f0=$(val total_back_flushes)
	i=0
	while [ $i -lt 100 ]; do
		echo x >"$mnt/f$i"
		i=$((i + 1))
	done
	f1=$(val total_back_flushes)
	[ "$f1" -eq "$f0" ] || fail "$kc: 100 closes flushed the storage $((f1 - f0)) times"
	[ "$(cat "$src/f99")" = x ] || fail "$kc: a close did not write back"
	echo y >"$mnt/g"
	sync "$mnt/g" 2>/dev/null || fail "$kc: sync FILE failed"
	f2=$(val total_back_flushes)
	dd if=/dev/zero of="$mnt/h" bs=4k count=4 conv=fsync 2>/dev/null ||
		fail "$kc: dd conv=fsync"
	f3=$(val total_back_flushes)
	echo "kernel_cache=$kc: flushes $f0 $f1 $f2 $f3" >&2
	[ "$f2" -gt "$f1" ] || fail "$kc: sync FILE (fsync) did not flush the storage"
	[ "$f3" -gt "$f2" ] || fail "$kc: dd conv=fsync did not flush the storage"
	mount_stop "$mnt"
done
exit 0
