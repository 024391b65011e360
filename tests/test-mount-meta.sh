#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-meta.sh - clio mount of a directory, the operations besides
# data and names: extended attributes (both ways, list, remove, the size
# protocol, a symlink's own, ro), fallocate (grow, keep size, punch hole
# and zero range, each over data still dirty in the cache, a punch hole
# freeing the source's blocks as a local one does, checked
# through the mount and in the source after unmount against references
# made with dd), copy_file_range (cp, also of dirty data, and an
# unaligned copy), readdirplus (ls -l of 200 files and a dirty one; every
# lookup it adds is forgotten again), flock, and fallocate and cp with
# cache=off.  The daemon runs with -d, so each operation is also checked
# to have reached it and succeeded.
set -e
. "$(dirname "$0")/mount-common.sh"
here=$(cd "$(dirname "$0")" && pwd)
for t in setfattr getfattr fallocate flock; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "skip: $t is missing (scripts/deps.sh installs it)" >&2
		exit 77
	fi
done
# tests/tools/xprobe.c: built by make tests, else here
probe=$(dirname "$CLIO")/tests/tools/xprobe
if [ ! -x "$probe" ]; then
	probe=$tmp/xprobe
	${CC:-cc} -std=c11 -o "$probe" "$here/tools/xprobe.c" || fail "cannot build xprobe"
fi
src=$tmp/src mnt=$tmp/mnt log=$tmp/mount.err
mkdir "$src" "$mnt"
head -c 300000 /dev/urandom >"$tmp/pat"
echo real >"$src/.clio-stats"

# op_ok NAME: the daemon got a NAME request and answered one with success
op_ok() {
	awk -v op="$1" '$1 == "unique:" && $4 == op { want[$2] = 1 }
		$1 == "unique:" && $3 == "success," && ($2 in want) { ok = 1 }
		END { exit !ok }' "$log" || fail "no $1 request answered with success"
}
# stop: unmount a -d mount; the log is shown only if the daemon failed
stop() {
	"$CLIO" umount "$mnt" || fail "clio umount"
	rc=0
	wait "$mount_pid" || rc=$?
	mount_pid=
	if [ "$rc" -ne 0 ]; then
		tail -n 30 "$log" >&2
		fail "clio mount exited $rc"
	fi
}
size() { stat -c %s "$1"; }
# zero REF OFF LEN: zeros over a reference file, in units of 1000 bytes
zero() { dd if=/dev/zero of="$1" bs=1000 seek=$(($2 / 1000)) count=$(($3 / 1000)) \
	conv=notrunc 2>/dev/null; }

# extended attributes may be an option of the mount (off by default)
xattr=
"$CLIO" mount -o xattr 2>&1 | grep -q "unknown option" || xattr=,xattr
# nothing is written back before a close or fsync: no write-behind, no
# age; first without the kernel's caches, so writes reach clio at once
keep=write_behind=0,dirty_age=600$xattr
mount_start "$src" "$mnt" -d -o $keep,kernel_cache=off

# ------------------------------------------------------------- xattrs
echo data >"$mnt/x"
mkdir "$mnt/sub"
setfattr -n user.one -v 1 "$mnt/x"
[ "$(getfattr --absolute-names --only-values -n user.one "$src/x")" = 1 ] ||
	fail "xattr set through the mount is not on the source"
long=$(printf '%0100d' 7)
setfattr -n user.two -v "$long" "$src/x"
[ "$(getfattr --absolute-names --only-values -n user.two "$mnt/x")" = "$long" ] ||
	fail "xattr set on the source is not seen through the mount"
getfattr --absolute-names -d "$mnt/x" >"$tmp/dump"
grep -qx 'user.one="1"' "$tmp/dump" && grep -qx "user.two=\"$long\"" "$tmp/dump" ||
	fail "getfattr -d through the mount: $(cat "$tmp/dump")"
setfattr -n user.d -v dir "$mnt/sub"
[ "$(getfattr --absolute-names --only-values -n user.d "$src/sub")" = dir ] ||
	fail "xattr of a directory"
# the size protocol: 0 asks the size, too small is ERANGE
[ "$("$probe" getxattr "$mnt/x" user.two 0)" = 100 ] || fail "getxattr size 0"
[ "$("$probe" getxattr "$mnt/x" user.two 99)" = ERANGE ] || fail "getxattr, small buffer"
[ "$("$probe" getxattr "$mnt/x" user.two 100)" = "100$long" ] || fail "getxattr, exact buffer"
[ "$("$probe" getxattr "$mnt/x" user.none 64)" = "No data available" ] ||
	fail "getxattr of a missing name: $("$probe" getxattr "$mnt/x" user.none 64)"
want=$("$probe" listxattr "$src/x" 4096)
case $want in *user.one,*) ;; *) fail "listxattr of the source: $want";; esac
case $want in *user.two,*) ;; *) fail "listxattr of the source: $want";; esac
[ "$("$probe" listxattr "$mnt/x" 4096)" = "$want" ] || fail "listxattr through the mount"
[ "$("$probe" listxattr "$mnt/x" 0)" = "${want%%[!0-9]*}" ] || fail "listxattr size 0"
[ "$("$probe" listxattr "$mnt/x" 5)" = ERANGE ] || fail "listxattr, small buffer"
setfattr -x user.one "$mnt/x"
getfattr --absolute-names -n user.one "$src/x" >/dev/null 2>&1 &&
	fail "removexattr: still on the source"
getfattr --absolute-names -n user.one "$mnt/x" >/dev/null 2>&1 &&
	fail "removexattr: still through the mount"
setfattr -x user.one "$mnt/x" 2>/dev/null && fail "removing a missing xattr worked"
[ "$(getfattr --absolute-names --only-values -n user.two "$mnt/x")" = "$long" ] ||
	fail "removexattr took another"
# a symlink's own attributes (trusted.*: user.* is refused on symlinks)
ln -s x "$mnt/lnk"
[ "$(getfattr --absolute-names --only-values -n user.two "$mnt/lnk")" = "$long" ] ||
	fail "xattr through a symlink to its target"
if setfattr -h -n trusted.clio -v src "$src/lnk" 2>/dev/null; then
	[ "$(getfattr --absolute-names -h --only-values -n trusted.clio "$mnt/lnk")" = src ] ||
		fail "a symlink's xattr is not seen through the mount"
	setfattr -h -n trusted.clio -v mnt "$mnt/lnk"
	[ "$(getfattr --absolute-names -h --only-values -n trusted.clio "$src/lnk")" = mnt ] ||
		fail "a symlink's xattr set through the mount"
	getfattr --absolute-names -n trusted.clio "$src/x" >/dev/null 2>&1 &&
		fail "a symlink's xattr went to its target"
	getfattr --absolute-names -h -d -m '^trusted\.' "$mnt/lnk" | grep -qx 'trusted.clio="mnt"' ||
		fail "listxattr of a symlink"
	setfattr -h -x trusted.clio "$mnt/lnk"
	getfattr --absolute-names -h -n trusted.clio "$src/lnk" >/dev/null 2>&1 &&
		fail "a symlink's xattr not removed"
else
	echo "note: no trusted.* xattrs on symlinks here: that part skipped" >&2
fi
for op in SETXATTR GETXATTR LISTXATTR REMOVEXATTR; do op_ok $op; done

# ---------------------------------------------------------- fallocate
fallocate -l 3M "$mnt/fa"
[ "$(size "$mnt/fa")" -eq 3145728 ] || fail "fallocate -l: size $(size "$mnt/fa") through the mount"
[ "$(size "$src/fa")" -eq 3145728 ] || fail "fallocate -l: size $(size "$src/fa") in the source"
[ "$(stat -c %b "$src/fa")" -ge 6144 ] ||
	fail "fallocate -l: $(stat -c %b "$src/fa") blocks underneath"
cmp -n 3145728 "$mnt/fa" /dev/zero || fail "fallocate -l: not zeros"
fallocate -n -o 3M -l 1M "$mnt/fa"
[ "$(size "$mnt/fa")" -eq 3145728 ] || fail "fallocate -n changed the size"
[ "$(stat -c %b "$src/fa")" -ge 8192 ] ||
	fail "fallocate -n: $(stat -c %b "$src/fa") blocks underneath"

# Over dirty data: xprobe hold writes pat into the file and runs the
# commands with the descriptor open (a close would write it back).  The
# source file must still be empty: the data is only in a cache; with
# kernel_cache=off also at least MIN bytes dirty in clio's.
cat >"$tmp/dirty.sh" <<'EOF'
set -e
srcf=$1 stats=$2 min=$3
shift 3
[ "$(stat -c %s "$srcf")" -eq 0 ] || { echo "already written back" >&2; exit 3; }
d=$(sed -n 's/^dirty_bytes: //p' "$stats")
[ "$d" -ge "$min" ] || { echo "not dirty: dirty_bytes $d" >&2; exit 3; }
"$@"
EOF
# dirty MIN NAME CMD...
dirty() {
	m=$1 f=$2
	shift 2
	"$probe" hold "$mnt/$f" "$tmp/pat" sh "$tmp/dirty.sh" "$src/$f" \
		"$mnt/.clio-stats" "$m" "$@"
}
# the references
cp "$tmp/pat" "$tmp/dp"; zero "$tmp/dp" 5000 70000
cp "$tmp/pat" "$tmp/dz"; zero "$tmp/dz" 123000 40000
cp "$tmp/pat" "$tmp/de"; zero "$tmp/de" 290000 10000; zero "$tmp/de" 299000 21000
cp "$tmp/pat" "$tmp/dg"; zero "$tmp/dg" 300000 200000
head -c 1048576 /dev/urandom >"$tmp/ph"
cp "$tmp/ph" "$tmp/ph0"; zero "$tmp/ph0" 5000 1000000

# dirty_checks PREFIX MIN: each mode over dirty data, and cp of it
dirty_checks() {
	p=$1 m=$2
	dirty $m ${p}dp fallocate -p -o 5000 -l 70000 "$mnt/${p}dp" ||
		fail "$p: punch hole over dirty data"
	cmp "$mnt/${p}dp" "$tmp/dp" || fail "$p: punch hole: wrong data through the mount"

	dirty $m ${p}dz fallocate -z -o 123000 -l 40000 "$mnt/${p}dz" ||
		fail "$p: zero range over dirty data"
	cmp "$mnt/${p}dz" "$tmp/dz" || fail "$p: zero range: wrong data through the mount"

	# past the end: a punch keeps the size, a zero range grows it
	dirty $m ${p}de fallocate -p -o 290000 -l 50000 "$mnt/${p}de" ||
		fail "$p: punch hole past the end"
	[ "$(size "$mnt/${p}de")" -eq 300000 ] ||
		fail "$p: punch hole past the end: size $(size "$mnt/${p}de")"
	fallocate -z -o 299000 -l 21000 "$mnt/${p}de"
	fallocate -z -n -o 310000 -l 90000 "$mnt/${p}de"
	[ "$(size "$mnt/${p}de")" -eq 320000 ] ||
		fail "$p: zero range past the end: size $(size "$mnt/${p}de")"
	cmp "$mnt/${p}de" "$tmp/de" || fail "$p: zero range past the end: wrong data"

	# mode 0 grows a dirty file (and keeps its data); -n keeps the size
	dirty $m ${p}dg fallocate -o 0 -l 500000 "$mnt/${p}dg" ||
		fail "$p: fallocate over dirty data"
	[ "$(size "$mnt/${p}dg")" -eq 500000 ] ||
		fail "$p: fallocate of a dirty file: size $(size "$mnt/${p}dg")"
	fallocate -n -l 600000 "$mnt/${p}dg"
	[ "$(size "$mnt/${p}dg")" -eq 500000 ] ||
		fail "$p: fallocate -n of a dirty file: size $(size "$mnt/${p}dg")"
	cmp "$mnt/${p}dg" "$tmp/dg" || fail "$p: fallocate of a dirty file: wrong data"

	dirty $m ${p}c1 cp "$mnt/${p}c1" "$mnt/${p}c2" || fail "$p: cp of a dirty file"
	cmp "$tmp/pat" "$mnt/${p}c2" || fail "$p: cp of a dirty file: the copy differs"
	# (cp copies a file it takes for sparse itself: copy_file_range too)
	: >"$mnt/${p}c4"
	dirty $m ${p}c3 sh -c '[ "$("$1" copy "$2" 0 "$3" 0 300000)" = 300000 ]' sh \
		"$probe" "$mnt/${p}c3" "$mnt/${p}c4" || fail "$p: copy_file_range of a dirty file"
	cmp "$tmp/pat" "$mnt/${p}c4" || fail "$p: copy_file_range of a dirty file: the copy differs"
}
# punch_frees PREFIX: a punch hole frees the source's blocks, as on a
# local file system (not zeros written over them), and reads as zeros;
# then a punch over data still dirty in the cache (an unaligned range)
punch_frees() {
	cp "$tmp/ph" "$mnt/$1ph"
	[ "$(stat -c %b "$src/$1ph")" -ge 2048 ] || fail "$1: ph: $(stat -c %b "$src/$1ph") blocks before the punch"
	fallocate -p -o 5000 -l 1000000 "$mnt/$1ph" || fail "$1: punch hole"
	cmp "$mnt/$1ph" "$tmp/ph0" || fail "$1: punch hole: wrong data through the mount"
	[ "$(stat -c %b "$src/$1ph")" -le 256 ] ||
		fail "$1: punch hole: $(stat -c %b "$src/$1ph") blocks left underneath (1 MiB file, 1000000 bytes punched)"
	dirty $2 $1pd fallocate -p -o 5000 -l 70000 "$mnt/$1pd" ||
		fail "$1: punch hole over dirty data"
	cmp "$mnt/$1pd" "$tmp/dp" || fail "$1: punch hole over dirty data: wrong data through the mount"
}
# after unmount: source_checks PREFIX
source_checks() {
	cmp "$src/$1ph" "$tmp/ph0" || fail "$1ph differs in the source after unmount"
	cmp "$src/$1pd" "$tmp/dp" || fail "$1pd differs in the source after unmount"
	for f in dp dz de dg; do
		cmp "$src/$1$f" "$tmp/$f" || fail "$1$f differs in the source after unmount"
	done
	for f in c1 c2 c3 c4; do
		cmp "$src/$1$f" "$tmp/pat" || fail "$1$f differs in the source after unmount"
	done
}

dirty_checks u 300000
punch_frees u 300000
op_ok FALLOCATE

# ---------------------------------------------------- copy_file_range
cp "$mnt/fa" "$mnt/c3"
cmp "$mnt/fa" "$mnt/c3" || fail "cp: the copy differs"
head -c 250000 /dev/urandom >"$mnt/c4"
cp "$mnt/c4" "$tmp/c4"
[ "$("$probe" copy "$mnt/uc1" 12345 "$mnt/c4" 777 200000)" = 200000 ] ||
	fail "copy_file_range at unaligned offsets: short or failed"
dd if="$tmp/pat" of="$tmp/c4" bs=64k iflag=skip_bytes,count_bytes oflag=seek_bytes \
	skip=12345 seek=777 count=200000 conv=notrunc 2>/dev/null
cmp "$mnt/c4" "$tmp/c4" || fail "copy_file_range at unaligned offsets: wrong data"
[ "$("$probe" copy "$mnt/uc1" 299000 "$mnt/c4" 0 5000)" = 1000 ] ||
	fail "copy_file_range across the source's end: not 1000"
dd if="$tmp/pat" of="$tmp/c4" bs=1000 skip=299 count=1 conv=notrunc 2>/dev/null
cmp "$mnt/c4" "$tmp/c4" || fail "copy_file_range across the source's end: wrong data"
op_ok COPY_FILE_RANGE

# -------------------------------------------------------- readdirplus
ls -a "$mnt" | grep -qx .clio-stats && fail "readdirplus lists .clio-stats"
# long names: the entries take more than one reply (32 KiB), so some are
# looked up and do not fit
mkdir "$mnt/many"
i=1
while [ $i -le 200 ]; do
	n=a-name-long-enough-that-200-entries-take-40-KiB-$i
	head -c $((i * 37)) "$tmp/pat" >"$mnt/many/$n"
	echo "$n $((i * 37))"
	i=$((i + 1))
done >"$tmp/want"
echo "dirty 300000" >>"$tmp/want"
sort -o "$tmp/want" "$tmp/want"
nfds() { ls "/proc/$mount_pid/fd" | wc -l; }
# settle: drop the kernel's dentries and inodes and wait for the daemon
# to close what their forgets release (each node holds a descriptor)
settle() {
	sync
	echo 2 >/proc/sys/vm/drop_caches
	n=$(nfds) i=0
	while [ $i -lt 20 ]; do
		sleep 0.1
		p=$n n=$(nfds) i=$((i + 1))
		[ "$n" -eq "$p" ] && [ $i -ge 5 ] && break
	done
}
[ "$(id -u)" -eq 0 ] && settle
base=$(nfds)
"$probe" hold "$mnt/many/dirty" "$tmp/pat" sh "$tmp/dirty.sh" "$src/many/dirty" \
	"$mnt/.clio-stats" 300000 sh -c 'ls -l "$1" >"$2"' sh "$mnt/many" "$tmp/ls" ||
	fail "ls -l of 200 files and a dirty one"
awk 'NF >= 9 { print $9, $5 }' "$tmp/ls" | sort >"$tmp/got"
cmp -s "$tmp/got" "$tmp/want" ||
	fail "ls -l: wrong names or sizes: $(diff "$tmp/got" "$tmp/want" | head -n 5)"
op_ok READDIRPLUS
if [ "$(id -u)" -eq 0 ]; then
	ls -l "$mnt/many" >/dev/null
	[ "$(nfds)" -ge $((base + 200)) ] ||
		fail "readdirplus: $(nfds) descriptors, base $base: no lookups kept"
	settle
	[ "$(nfds)" -le "$base" ] ||
		fail "readdirplus: $(($(nfds) - base)) nodes left after every forget (lookup count)"
else
	echo "note: not root, lookup counts not checked" >&2
fi

# -------------------------------------------------------------- flock
touch "$mnt/lock"
flock "$mnt/lock" sh -c 'touch "$1"; while [ ! -e "$2" ]; do sleep 0.05; done' sh \
	"$tmp/held" "$tmp/release" &
locker=$!
i=0
while [ ! -e "$tmp/held" ]; do
	i=$((i + 1))
	[ $i -le 200 ] || fail "flock: the first holder never got the lock"
	sleep 0.05
done
flock -n "$mnt/lock" true && fail "flock -n got a lock another process holds"
touch "$tmp/release"
wait $locker || fail "flock: the first holder failed"
flock -n "$mnt/lock" true || fail "flock -n failed on a free lock"

stop
source_checks u
cmp "$src/c4" "$tmp/c4" || fail "c4 differs in the source after unmount"

# ------------------------------------- the same under the kernel's caches
# (its writeback cache holds the writes; fallocate and copy_file_range
# make the kernel write them to clio first)
mount_start "$src" "$mnt" -d -o $keep,kernel_cache=on
dirty_checks k 0
punch_frees k 0
op_ok FALLOCATE
op_ok COPY_FILE_RANGE
stop
source_checks k
[ "$(cat "$src/.clio-stats")" = real ] || fail "the hidden .clio-stats changed"

# ----------------------------------------------------------------- ro
mount_start "$src" "$mnt" -d -o ro$xattr
[ "$(getfattr --absolute-names --only-values -n user.two "$mnt/x")" = "$long" ] ||
	fail "ro: getxattr"
setfattr -n user.ro -v 1 "$mnt/x" 2>/dev/null && fail "ro: setxattr worked"
setfattr -x user.two "$mnt/x" 2>/dev/null && fail "ro: removexattr worked"
fallocate -l 1M "$mnt/x" 2>/dev/null && fail "ro: fallocate worked"
stop
getfattr --absolute-names -n user.ro "$src/x" >/dev/null 2>&1 &&
	fail "ro: the xattr reached the source"
[ "$(getfattr --absolute-names --only-values -n user.two "$src/x")" = "$long" ] ||
	fail "ro: the xattr was removed"
[ "$(size "$src/x")" -eq 5 ] || fail "ro: fallocate changed the size"

# ---------------------------------------------------------- cache=off
mount_start "$src" "$mnt" -d -o cache=off
fallocate -l 1M "$mnt/off"
[ "$(size "$src/off")" -eq 1048576 ] || fail "cache=off: fallocate -l"
cp "$tmp/pat" "$mnt/offp"
fallocate -p -o 5000 -l 70000 "$mnt/offp"
cmp "$mnt/offp" "$tmp/dp" || fail "cache=off: punch hole"
# (cp reads a file with holes itself: copy one without)
cp "$tmp/pat" "$mnt/offq"
cp "$mnt/offq" "$mnt/offc"
cmp "$mnt/offc" "$tmp/pat" || fail "cache=off: cp"
op_ok FALLOCATE
op_ok COPY_FILE_RANGE
stop
cmp "$src/offc" "$tmp/pat" || fail "cache=off: the copy in the source"
exit 0
