#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-reuse.sh - the cache outlives the connections, on Unix
# sockets: an 8 MiB image read twice with nbdcopy (four connections,
# all closed in between) through the clio filter (nbdkit's log filter
# below it counts the plugin's reads) and through the clio plugin
# (serving an NBD device whose server, nbdkit's memory plugin with the
# log filter, counts them): the second copy is compared and reads
# nothing from below; a write of one connection, after it closed, is in
# the file and read back by the next one.  The plugin serving a file:
# a change of the file by another program while no connection is open
# is seen by the next connection (no stale block is served); so is a
# file renamed over it (as rsync replaces one), and a write of the next
# connection lands in the new file (it went to the old, unlinked one);
# also with a disk cache, whose blocks of the old file go (the device
# named by a relative path), and a file changed in place while no server
# ran is seen by the next server on the same disk cache.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
command -v nbdcopy >/dev/null 2>&1 || { echo "nbdcopy not found (apt-get install libnbd-bin)"; exit 77; }
nbd_with_clio
head -c 8388608 /dev/urandom >"$tmp/img"
head -c 65536 /dev/urandom >"$tmp/new"

# twice WHAT: nbdcopy out of $uri twice, compared; the reads below ($tmp/log)
# all made by the first
twice() {
	nbdcopy "$uri" "$tmp/out" && cmp "$tmp/out" "$tmp/img" || fail "$1: first nbdcopy out"
	first=$(grep -c ' Read ' "$tmp/log")
	nbdcopy "$uri" "$tmp/out" && cmp "$tmp/out" "$tmp/img" || fail "$1: second nbdcopy out"
	second=$(grep -c ' Read ' "$tmp/log")
	[ "$first" -gt 0 ] || fail "$1: nothing read below"
	[ "$second" -eq "$first" ] ||
		fail "$1: the second copy read $((second - first)) times below (the cache was dropped with the connections)"
	echo "ok: $1: a second nbdcopy out, on new connections, reads nothing below ($first reads, all by the first)"
}

# ------------------------------------------------------------ the filter
cp "$tmp/img" "$tmp/disk"
nbd_start --filter="$filter" --filter=log file "$tmp/disk" logfile="$tmp/log" \
	bsize=64k cache_size=32M
twice "the clio filter"
"$CLIO" dd if="$tmp/new" of="$uri" bs=64k seek=3 conv=notrunc 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd into the filter"; }
cmp -n 65536 -i 0:196608 "$tmp/new" "$tmp/disk" ||
	fail "a closed connection's write is not in the file"
"$CLIO" dd if="$uri" of="$tmp/back" bs=64k skip=3 count=1 2>/dev/null &&
	cmp "$tmp/back" "$tmp/new" || fail "the next connection reads other bytes"
echo "ok: the clio filter: a closed connection's write is in the file, read back"

# ------------------------------------------------------------ the plugin
nbd_stop
: >"$tmp/log"
nbdkit -U "$tmp/inner" --pidfile "$tmp/inner.pid" --filter=log memory 8M \
	logfile="$tmp/log" || fail "the inner nbdkit did not start"
nbd_wait_pid "$tmp/inner.pid"
inner=$nbd_pids
nbd_pids=""
trap 'nbd_stop; kill "$inner" 2>/dev/null; rm -rf "$tmp"' EXIT
nbdcopy "$tmp/img" "nbd+unix:///?socket=$tmp/inner" || fail "nbdcopy into the inner server"
nbd_start "$plugin" "nbd+unix:///?socket=$tmp/inner" bsize=64k cache_size=32M
nbd_pids="$nbd_pids $inner" # the outer one stops first: it writes back
: >"$tmp/log"
twice "the clio plugin"

# ------------------------------------------------------------ a file changed between connections
nbd_stop
cp "$tmp/img" "$tmp/disk"
nbd_start "$plugin" "$tmp/disk" bsize=64k cache_size=32M
nbdcopy "$uri" "$tmp/out" && cmp "$tmp/out" "$tmp/disk" || fail "the file plugin: nbdcopy out"
head -c 8388608 /dev/urandom >"$tmp/disk.new"
dd if="$tmp/disk.new" of="$tmp/disk" bs=1M conv=notrunc status=none
touch -d '+1 minute' "$tmp/disk"
nbdcopy "$uri" "$tmp/out" && cmp "$tmp/out" "$tmp/disk.new" ||
	fail "the file plugin served blocks of the file as it was before another program changed it"
echo "ok: the clio plugin on a file: a change made between connections is seen by the next one"

head -c 8388608 /dev/urandom >"$tmp/disk.new"
mv "$tmp/disk.new" "$tmp/disk"
cp "$tmp/disk" "$tmp/want"
nbdcopy "$uri" "$tmp/out" && cmp "$tmp/out" "$tmp/want" ||
	fail "the file plugin served the file that was renamed over, not the new one"
nbdcopy "$tmp/new" "$uri" || fail "nbdcopy into the renamed-over file"
dd if="$tmp/new" of="$tmp/want" conv=notrunc status=none
nbd_stop
cmp "$tmp/disk" "$tmp/want" || fail "a write after the file was renamed over is not in the file"
echo "ok: the clio plugin on a file: a file renamed over it between connections is served and written"

# the same with a disk cache, which holds the old file's blocks under
# the device's name (a relative one, as the daemon in / was given it)
mkdir "$tmp/dc"
cd "$tmp" || fail "cd $tmp"
nbd_start "$plugin" disk bsize=64k cache_size=1M disk_cache="$tmp/dc"
cd "$OLDPWD" || fail "cd back"
nbdcopy "$uri" "$tmp/out" && cmp "$tmp/out" "$tmp/disk" || fail "with a disk cache: nbdcopy out"
nbdcopy "$uri" "$tmp/out" && cmp "$tmp/out" "$tmp/disk" || fail "with a disk cache: nbdcopy out again"
head -c 8388608 /dev/urandom >"$tmp/disk.new"
mv "$tmp/disk.new" "$tmp/disk"
nbdcopy "$uri" "$tmp/out" && cmp "$tmp/out" "$tmp/disk" ||
	fail "with a disk cache: the blocks of the file that was renamed over were served"
nbd_stop
echo "ok: with a disk cache too"

# the next server on the same disk cache, the file changed in place while
# none ran: the daemon (in /) found no file at the relative path, took
# it for a device without a version, and served the blocks of the disk
# cache, as they were before the change
cp "$tmp/disk" "$tmp/want"
cd "$tmp" || fail "cd $tmp"
nbd_start "$plugin" disk bsize=64k cache_size=1M disk_cache="$tmp/dc"
cd "$OLDPWD" || fail "cd back"
nbdcopy "$uri" "$tmp/out" && cmp "$tmp/out" "$tmp/want" || fail "with a disk cache, server 2: nbdcopy out"
nbd_stop
head -c 8388608 /dev/urandom >"$tmp/disk.new"
dd if="$tmp/disk.new" of="$tmp/disk" bs=1M conv=notrunc status=none
touch -d '+1 minute' "$tmp/disk"
cd "$tmp" || fail "cd $tmp"
nbd_start "$plugin" disk bsize=64k cache_size=1M disk_cache="$tmp/dc"
cd "$OLDPWD" || fail "cd back"
nbdcopy "$uri" "$tmp/out" && cmp "$tmp/out" "$tmp/disk.new" ||
	fail "with a disk cache, a file named by a relative path and changed while no server ran: the next server served its old blocks"
nbd_stop
echo "ok: with a disk cache, a file changed between two servers is seen by the second (a relative path)"
exit 0
