#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-mount.sh - `clio mount nfs://127.0.0.1/EXPORT` against
# NFS-Ganesha in the test's own namespace: files written through the
# mount (seeded sizes, 0 bytes to 1.5 MB, and a seeded overwrite inside
# one) equal their copies on the export's disk after close, files made on
# the export read back equal through the mount; mkdir, rename (of a file
# and of a directory with a file in it), link, symlink (a target of 4000
# bytes: ENAMETOOLONG) and readlink, a hard link to a symlink (EPERM),
# mkfifo and mknod,
# chmod, chown and chgrp (the other id left as the server has it),
# truncate, utimens, unlink and rmdir through the mount are seen in
# the export's directory, and the listing through the mount equals the
# export's; after each change through the mount stat shows at once the
# directory's new mtime and link count, and a file's after the removal
# of its other name; rewinddir(3) lists a directory anew; names with ? & % and = read and write as any other, and
# a file whose directory is more than 1024 bytes below / (MOUNT's
# limit); clio stat lists an open file's device; after an fsync of an
# open file stat shows the server's size and mtime, after a write not
# yet written back a later mtime; cp -p keeps its mtime
# (close-to-open and lease); a bad option, a bad
# value in the URL's query and a missing export are one-line errors (exit
# 64, 66); after the unmount everything is on the server; under lease,
# an idle device evicted (idle_devices=1) writes its file back, the
# newest stays dirty until the unmount.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"
. "$(dirname "$0")/nfs-mount-common.sh"

seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
fail() { echo "FAIL: $* (SEED=$seed)" >&2; exit 1; }
echo "seed $seed"

ganesha_start
url="nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port"
m=$tmp/mnt
nfs_mount "$m" "$url" -o bsize=16k,cache_size=8M

# ----------------------------------------------------------- round trips
sizes=$(awk -v s="$seed" 'BEGIN { srand(s); printf "0 1 4097 1500007";
	for (i = 0; i < 4; i++) printf " %d", int(rand() * 300000) }')
k=0
for n in $sizes; do
	k=$((k + 1))
	head -c "$n" /dev/urandom >"$tmp/w$k"
	cp "$tmp/w$k" "$m/w$k" || fail "cp of $n bytes into the mount"
	cmp "$tmp/w$k" "$export/w$k" || fail "w$k ($n bytes): the export's file differs after close"
	cmp "$tmp/w$k" "$m/w$k" || fail "w$k ($n bytes) reads back different through the mount"
done
echo "ok: $k files written through the mount equal the export's ($sizes bytes)"

# an overwrite inside a file, at a seeded offset, without truncation
off=$(awk -v s="$seed" 'BEGIN { srand(s + 1); print int(rand() * 1400000) }')
head -c 70001 /dev/urandom >"$tmp/piece"
dd if="$tmp/piece" of="$m/w4" bs=4096 oflag=seek_bytes seek="$off" conv=notrunc status=none ||
	fail "overwrite at $off"
dd if="$tmp/piece" of="$tmp/w4" bs=4096 oflag=seek_bytes seek="$off" conv=notrunc status=none
cmp "$tmp/w4" "$export/w4" || fail "after an overwrite at $off the export's file differs"
echo "ok: 70001 bytes overwritten at $off, on the server after close"

head -c 777777 /dev/urandom >"$export/fromserver"
cmp "$export/fromserver" "$m/fromserver" || fail "a file made on the export reads back different"
echo "ok: a file made on the export reads back equal through the mount"

# names with the characters of a URL's query and escapes: written and
# read back through the mount, the same on the export
for name in 'R&D' 'why?' '100%25' 'a?b&c%d=e'; do
	head -c 50000 /dev/urandom >"$tmp/odd"
	cp "$tmp/odd" "$m/$name" || fail "cannot write '$name' through the mount"
	cmp "$tmp/odd" "$export/$name" || fail "'$name' on the export differs"
	cmp "$tmp/odd" "$m/$name" || fail "'$name' reads back different"
	head -c 3000 /dev/urandom >"$export/$name.srv"
	cmp "$export/$name.srv" "$m/$name.srv" || fail "'$name.srv' made on the export reads different"
done
echo "ok: names with ? & % = are written and read through the mount"

# a file whose directory is more than MOUNT's 1024 bytes below / (six
# names of 200 bytes): its device mounts a shorter directory and looks
# the rest up
n200=$(awk 'BEGIN { while (i++ < 200) printf "n" }')
deep=$n200/$n200/$n200/$n200/$n200/$n200
mkdir -p "$m/$deep" || fail "mkdir -p of a deep directory"
head -c 70000 /dev/urandom >"$tmp/deep"
cp "$tmp/deep" "$m/$deep/f" || fail "cannot write a file $(printf %s "$export/$deep/f" | wc -c) bytes below /"
cmp "$tmp/deep" "$export/$deep/f" && cmp "$tmp/deep" "$m/$deep/f" ||
	fail "the deep file differs"
rm -r "$m/$n200" || fail "rm -r of the deep directory"
echo "ok: a file more than 1024 bytes below / is written and read"

# ---------------------------------------------------------- directories
mkdir "$m/d" || fail "mkdir"
[ -d "$export/d" ] || fail "mkdir: no directory on the export"
echo hello >"$m/d/a" || fail "create in d"
mv "$m/d/a" "$m/d/b" || fail "rename"
[ ! -e "$export/d/a" ] && [ "$(cat "$export/d/b")" = hello ] || fail "rename: not seen on the export"
mv "$m/d" "$m/e" || fail "rename of a directory"
[ "$(cat "$export/e/b")" = hello ] && [ "$(cat "$m/e/b")" = hello ] ||
	fail "after the directory's rename its file is not at e/b"
echo more >>"$m/e/b" || fail "append after the directory's rename"
[ "$(cat "$export/e/b")" = "$(printf 'hello\nmore')" ] || fail "append after rename: the export has '$(cat "$export/e/b")'"
ln "$m/e/b" "$m/e/c" || fail "link"
[ "$(stat -c %i "$export/e/b")" = "$(stat -c %i "$export/e/c")" ] || fail "link: not one inode on the export"
[ "$(stat -c %h "$m/e/b")" -eq 2 ] || fail "link: the mount shows $(stat -c %h "$m/e/b") links"
ln -s ../w1 "$m/e/s" || fail "symlink"
mkfifo "$m/e/p" && mknod "$m/e/cd" c 1 3 || fail "mkfifo, mknod"
[ -p "$export/e/p" ] && [ "$(stat -c '%F %t,%T' "$export/e/cd")" = "character special file 1,3" ] &&
	[ "$(stat -c '%F %t,%T' "$m/e/cd")" = "character special file 1,3" ] ||
	fail "mknod: the export has '$(stat -c %F "$export/e/p")' and '$(stat -c '%F %t,%T' "$export/e/cd")'"
(echo fifo >"$m/e/p" &)
[ "$(timeout 10 cat "$m/e/p")" = fifo ] || fail "nothing came through the FIFO made through the mount"
rm "$m/e/p" "$m/e/cd" || fail "rm of the FIFO and the device"
[ "$(readlink "$export/e/s")" = ../w1 ] || fail "symlink: the export's link says '$(readlink "$export/e/s")'"
[ "$(readlink "$m/e/s")" = ../w1 ] || fail "readlink through the mount"
# a hard link to a symbolic link: refused (libnfs's LINK would link the
# file it names), and nothing changes on the export
ln "$m/e/s" "$m/e/hs" 2>"$tmp/err" && fail "a hard link to a symlink was made"
grep -q "Operation not permitted" "$tmp/err" && [ ! -e "$export/e/hs" ] && [ ! -L "$export/e/hs" ] &&
	[ "$(stat -c %h "$export/w1")" -eq 1 ] ||
	fail "ln of a symlink: '$(cat "$tmp/err")', $(stat -c %h "$export/w1") links to w1"
# a target of 3000 bytes is made; one of 4000 is too long for libnfs's
# 4 KiB request: ENAMETOOLONG (not ENOMEM), and nothing is made
t3k=$(awk 'BEGIN { while (i++ < 3000) printf "t" }')
ln -s "$t3k" "$m/e/s3k" && [ "$(readlink "$export/e/s3k")" = "$t3k" ] || fail "a symlink to 3000 bytes"
rm "$m/e/s3k"
ln -s "$t3k$(awk 'BEGIN { while (i++ < 1000) printf "t" }')" "$m/e/s4k" 2>"$tmp/err" &&
	fail "a symlink to 4000 bytes was made"
grep -q "File name too long" "$tmp/err" && [ ! -L "$export/e/s4k" ] ||
	fail "a symlink to 4000 bytes: '$(cat "$tmp/err")'"
chmod 640 "$m/e/b" || fail "chmod"
# chown of the owner only keeps the group the server has, and chgrp the
# owner (not those cached at the last stat)
stat "$m/e/b" >/dev/null && chgrp 7 "$export/e/b" && chown 5 "$m/e/b" || fail "chown 5"
[ "$(stat -c %u:%g "$export/e/b")" = 5:7 ] || fail "chown 5: the export shows $(stat -c %u:%g "$export/e/b"), not 5:7"
stat "$m/e/b" >/dev/null && chown 6 "$export/e/b" && chgrp 8 "$m/e/b" || fail "chgrp 8"
[ "$(stat -c %u:%g "$export/e/b")" = 6:8 ] || fail "chgrp 8: the export shows $(stat -c %u:%g "$export/e/b"), not 6:8"
[ "$(stat -c %a "$export/e/b")" = 640 ] || fail "chmod: the export shows $(stat -c %a "$export/e/b")"
truncate -s 3 "$m/e/b" || fail "truncate"
[ "$(stat -c %s "$export/e/b")" -eq 3 ] && [ "$(cat "$m/e/b")" = hel ] || fail "truncate: not 3 bytes"
touch -d "2001-02-03 04:05:06" "$m/e/b" || fail "utimens"
[ "$(stat -c %Y "$export/e/b")" = "$(date -d "2001-02-03 04:05:06" +%s)" ] || fail "utimens: mtime $(stat -c %Y "$export/e/b")"
[ "$(ls -a "$m/e" | tr '\n' ' ')" = "$(ls -a "$export/e" | tr '\n' ' ')" ] ||
	fail "the listing differs: '$(ls -a "$m/e" | tr '\n' ' ')'"
[ "$(ls "$m" | tr '\n' ' ')" = "$(ls "$export" | tr '\n' ' ')" ] || fail "the root's listing differs"
df "$m" >/dev/null || fail "statfs"
rm "$m/e/c" "$m/e/s" || fail "unlink"
[ ! -e "$export/e/c" ] && [ ! -L "$export/e/s" ] && [ -e "$export/e/b" ] || fail "unlink: not seen on the export"
rm "$m/e/b" && rmdir "$m/e" || fail "rmdir"
[ ! -e "$export/e" ] || fail "rmdir: the export still has e"
mkdir "$m/e" && rmdir "$m/e" || fail "a directory made again where one was removed"
echo "ok: mkdir, rename, link, symlink, readlink, chmod, truncate, utimens, unlink, rmdir on the export"

# each change through the mount is seen at once in the attributes it
# changes (not after acdirmin): the directory's mtime and link count,
# a renamed file's ctime, and the link count of a file that lost its
# other name
mkdir "$m/pd" && touch -d 2001-01-01 "$m/pd" && stat "$m/pd" >/dev/null || fail "mkdir pd"
for op in "mkdir $m/pd/sub" "touch $m/pd/f" "stat $m/pd/f" "mv $m/pd/f $m/pd/g" "ln $m/pd/g $m/pd/h" \
	"rm $m/pd/g" "ln -s g $m/pd/s" "rmdir $m/pd/sub"; do
	$op || fail "$op"
	[ "$(stat -c '%h %y' "$m/pd")" = "$(stat -c '%h %y' "$export/pd")" ] ||
		fail "after '$op' the directory shows '$(stat -c '%h %y' "$m/pd")', the export '$(stat -c '%h %y' "$export/pd")'"
	[ ! -e "$m/pd/h" ] || [ "$(stat -c %h "$m/pd/h")" = "$(stat -c %h "$export/pd/h")" ] ||
		fail "after '$op' pd/h shows $(stat -c %h "$m/pd/h") links, the export $(stat -c %h "$export/pd/h")"
	[ ! -e "$m/pd/g" ] || [ "$(stat -c %z "$m/pd/g")" = "$(stat -c %z "$export/pd/g")" ] ||
		fail "after '$op' pd/g shows ctime $(stat -c %z "$m/pd/g"), the export $(stat -c %z "$export/pd/g")"
done
rm -r "$m/pd" || fail "rm -r pd"
echo "ok: a directory's mtime and link count, a renamed file's ctime and a file's link count, seen at once after each change"

# rewinddir(3) lists the directory as it is now (CPython's listdir(fd)
# rewinds the descriptor it read): a name made and one removed through
# the mount, one made on the export
mkdir "$m/rd" && touch "$m/rd/a" "$m/rd/b" || fail "mkdir rd"
python3 - "$m/rd" "$export/rd" >"$tmp/rd.out" 2>&1 <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
l1 = sorted(os.listdir(fd))
open(sys.argv[1] + "/c", "w").close()
os.unlink(sys.argv[1] + "/a")
l2 = sorted(os.listdir(fd))
open(sys.argv[2] + "/d", "w").close()
l3 = sorted(os.listdir(fd))
print(" ".join(l1), "|", " ".join(l2), "|", " ".join(l3))
EOF
[ "$(cat "$tmp/rd.out")" = "a b | b c | b c d" ] ||
	fail "listings after rewinddir: '$(cat "$tmp/rd.out")', not 'a b | b c | b c d'"
rm -r "$m/rd" || fail "rm -r rd"
echo "ok: a directory read again after rewinddir is listed as it is now"

# clio stat: the open file's device is listed by its path
exec 3<"$m/w4"
"$CLIO" stat "$m" >"$tmp/stat" || fail "clio stat"
grep -q "nfs://127.0.0.1$export/w4" "$tmp/stat" || { cat "$tmp/stat"; fail "clio stat: no device of w4"; }
exec 3<&-
echo "ok: clio stat lists the open file's nfs:// device"

# after an fsync of a file still open, stat shows the server's size and
# mtime (not those of the open, in 2001)
head -c 5000 /dev/urandom >"$export/mt"
touch -d 2001-01-01 "$export/mt"
python3 - "$m/mt" "$export/mt" >"$tmp/mt.out" 2>&1 <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.pwrite(fd, b"z" * 3000, 4000)
os.fsync(fd)
a, b = os.stat(sys.argv[1]), os.stat(sys.argv[2])
print(a.st_size, a.st_mtime_ns, a.st_ctime_ns, b.st_size, b.st_mtime_ns, b.st_ctime_ns)
os.close(fd)
EOF
read -r s1 m1 c1 s2 m2 c2 <"$tmp/mt.out" || fail "the fsync of an open file: $(cat "$tmp/mt.out")"
[ "$s1 $m1 $c1" = "$s2 $m2 $c2" ] && [ "$s1" -eq 7000 ] ||
	fail "after fsync the mount shows size mtime ctime '$s1 $m1 $c1', the server '$s2 $m2 $c2'"
echo "ok: after fsync of an open file, stat shows the server's size, mtime and ctime"

# a write not yet written back moves the mtime stat shows at once, as
# on a local file system; after the close it is the server's
python3 - "$m/mw" "$export/mw" >"$tmp/mw.out" 2>&1 <<'EOF'
import os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"a" * 1000)
os.fsync(fd)
t0 = os.stat(sys.argv[1]).st_mtime_ns
time.sleep(0.05)
os.write(fd, b"b" * 1000)
a, b = os.stat(sys.argv[1]).st_mtime_ns, os.fstat(fd).st_mtime_ns
os.close(fd)
print(a > t0 and b > t0, os.stat(sys.argv[1]).st_mtime_ns == os.stat(sys.argv[2]).st_mtime_ns)
EOF
[ "$(cat "$tmp/mw.out")" = "True True" ] ||
	fail "stat during and after a write (moved, the server's): '$(cat "$tmp/mw.out")'"
echo "ok: a write moves the mtime stat shows before it is written back"

# cp -p sets the times on the open descriptor after writing: the data
# written back at the close must not set the mtime again
head -c 300000 /dev/urandom >"$tmp/old"
touch -d "2001-02-03 04:05:06" "$tmp/old"
cp -p "$tmp/old" "$m/old" || fail "cp -p"
[ "$(stat -c %Y "$export/old")" = "$(stat -c %Y "$tmp/old")" ] && cmp "$tmp/old" "$export/old" ||
	fail "cp -p: the export's mtime is $(stat -c %y "$export/old")"
echo "ok: cp -p keeps the mtime it set"

# bad options and exports: one line naming the value, before or at the mount
"$CLIO" mount -f -o actimeo=x "$url" "$tmp/m2" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 64 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "actimeo 'x'" "$tmp/err" ||
	{ cat "$tmp/err"; fail "-o actimeo=x: exit $rc"; }
mkdir -p "$tmp/m2"
"$CLIO" mount -f "nfs://127.0.0.1$export-none?port=$nfs_port&mountport=$mnt_port" "$tmp/m2" \
	2>"$tmp/err"; rc=$?
[ "$rc" -eq 66 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "export-none" "$tmp/err" ||
	{ cat "$tmp/err"; fail "a missing export: exit $rc"; }
p=$nfs_port
"$CLIO" mount -f "nfs://127.0.0.1$export-none?port=$p&port=$p&port=$p&port=$p&port=$p&port=$p&port=$p&mountport=$mnt_port" \
	"$tmp/m2" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 64 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "'port' given twice" "$tmp/err" ||
	{ cat "$tmp/err"; fail "seven port= keys: exit $rc"; }
# the URL's query is the device's: a bad value fails the mount at once
# (uid=abc would make libnfs's names root's), not each open later
for kv in uid=abc qd=0 timeo=x foo=1; do
	rc=0
	timeout 10 "$CLIO" mount -f "$url&$kv" "$tmp/m2" 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 64 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF "$kv" "$tmp/err" ||
		{ cat "$tmp/err"; fail "$kv in the URL: exit $rc"; }
	! mountpoint -q "$tmp/m2" || fail "$kv in the URL: mounted"
done
echo "ok: a bad actimeo, a bad key of the URL (exit 64) and a missing export (exit 66) are one line each"

# written, then the unmount: everything on the server
head -c 200000 /dev/urandom >"$tmp/last"
cp "$tmp/last" "$m/last"
nfs_umount "$m"
cmp "$tmp/last" "$export/last" || fail "after the unmount the export's file differs"
echo "ok: unmounted cleanly"

# lease with one idle device: closing a third file evicts the oldest idle
# device, whose dirty data is then written back; the last stays dirty
# until the unmount
nfs_mount "$m" "$url" -o lease,idle_devices=1
cp -p "$tmp/old" "$m/lold" || fail "lease: cp -p"
for f in la lb lc; do
	head -c 150000 /dev/urandom >"$tmp/$f"
	cp "$tmp/$f" "$m/$f" || fail "lease: cp $f"
done
# the kernel sends a close's RELEASE, which evicts, after close(2)
# returned: wait for it (5 s at most)
for f in la lb; do
	i=0
	while ! cmp -s "$tmp/$f" "$export/$f" && [ $i -lt 100 ]; do
		sleep 0.05; i=$((i + 1))
	done
	cmp "$tmp/$f" "$export/$f" || fail "lease, idle_devices=1: $f not written back at its eviction"
done
[ ! -s "$export/lc" ] || fail "lease: lc on the server before its write-back"
nfs_umount "$m"
for f in la lb lc; do
	cmp "$tmp/$f" "$export/$f" || fail "lease: $f differs after the unmount"
done
[ "$(stat -c %Y "$export/lold")" = "$(stat -c %Y "$tmp/old")" ] ||
	fail "lease, cp -p: the export's mtime is $(stat -c %y "$export/lold") after the unmount"
echo "ok: lease, idle_devices=1: written back at eviction and at the unmount"

# inode numbers: the same through two mounts one after the other (they
# were the node's address in the daemon), and the same in a listing as
# in stat(2), for a file, a directory and the root
mkdir -p "$export/idir"
: >"$export/idir/ifile"
inos() {
	stat -c %i "$m" "$m/idir" "$m/idir/ifile" | tr '\n' ' '
}
nfs_mount "$m" "$url"
first=$(inos)
listed=$(ls -id "$m/idir" | cut -d' ' -f1)
[ "$listed" = "$(stat -c %i "$m/idir")" ] || fail "idir: ls -i says $listed, stat $(stat -c %i "$m/idir")"
listed=$(ls -i "$m/idir" | sed -n 's/^ *\([0-9]*\) ifile$/\1/p')
[ "$listed" = "$(stat -c %i "$m/idir/ifile")" ] ||
	fail "ifile: its directory's listing says $listed, stat $(stat -c %i "$m/idir/ifile")"
nfs_umount "$m"
nfs_mount "$m" "$url"
second=$(inos)
nfs_umount "$m"
[ "$first" = "$second" ] || fail "inode numbers changed across mounts: $first, then $second"
echo "ok: inode numbers the same across mounts and in listings: $first"
exit 0
