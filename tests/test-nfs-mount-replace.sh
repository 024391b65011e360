#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-mount-replace.sh - close-to-open through `clio mount nfs://`
# when another writer replaces or removes a name on the server
# (NFS-Ganesha in the test's namespace), the kernel's entry for it still
# cached: each open looks the name up, so
#  1. a file replaced by a rename over it (an editor's or rsync's save)
#     reads as the new file at the next open, without waiting;
#  2. a write through the mount after such a replace goes to the new
#     file, and the old contents do not come back;
#  3. a file removed on the server is gone at the next open (ENOENT), not
#     read through the old file's handle;
#  4. a file renamed away on the server is found under its new name with
#     its contents, and its old name is gone;
#  5. a file unlinked through the mount while open there: its name is
#     gone, its descriptor still reads its contents and writes, fsync and
#     close succeed (it hides under another name until then), and after
#     the close nothing of it is left on the export;
#  6. the same for a file open through the mount that another is renamed
#     over there (the new file under its name); a rename from a name
#     gone on the server fails and leaves the open file under its own;
#  7. a file with two names, one removed through the mount (the last
#     looked up): the other still opens, reads and stats it;
#  8. a file unlinked through the mount while open, the daemon ended by
#     SIGTERM before its close: its hidden name is removed at the end;
#  9. files open through the mount, one renamed away and one removed on
#     the server: past the attribute timeout their descriptors still
#     fstat and read (by the device's handle), and a write lands in the
#     renamed file;
# 10. a file unlinked through the mount while open, then its directory
#     renamed there: its hidden name is removed at the close;
# 11. directories, symbolic links and files made in a directory that
#     another process renames back and forth through the mount: each
#     call succeeds and each name is there.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"
. "$(dirname "$0")/nfs-mount-common.sh"
# left_on_export PATTERN...: names of the export that match one of the
# grep patterns, after waiting up to 5 s for them to go: the kernel sends
# FUSE's RELEASE, at which the hidden name is removed, after close(2)
# has returned
left_on_export() {
	i=0
	while ls -A "$export" | grep -q "$@" && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
	ls -A "$export" | grep "$@"
}

ganesha_start
mnt=$tmp/m
nfs_mount "$mnt" "nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port"

# 1. replaced by a rename
head -c 100000 /dev/urandom >"$export/f"
cmp "$mnt/f" "$export/f" || fail "the first read differs"
head -c 70000 /dev/urandom >"$export/f.new"
cp "$export/f.new" "$tmp/v2"
mv "$export/f.new" "$export/f"
cmp "$mnt/f" "$tmp/v2" || fail "after a rename over it on the server, the old file is read"
echo "ok: a file replaced by a rename on the server reads as the new one at once"

# 2. written through the mount after a replace
head -c 50000 /dev/urandom >"$export/f.new"
mv "$export/f.new" "$export/f"
echo "written through the mount" >"$mnt/f" || fail "writing after the replace"
[ "$(cat "$export/f")" = "written through the mount" ] ||
	fail "the export's file is not what the mount wrote after the replace"
[ "$(cat "$mnt/f")" = "written through the mount" ] ||
	fail "the mount reads otherwise after its write"
echo "ok: a write after the replace goes to the new file"

# 3. removed on the server
echo "to be removed" >"$export/g"
[ "$(cat "$mnt/g")" = "to be removed" ] || fail "g reads otherwise"
rm "$export/g"
if got=$(cat "$mnt/g" 2>/dev/null); then
	fail "a file removed on the server is still read: '$got'"
fi
echo "ok: a file removed on the server is gone at the next open"

# 4. renamed away on the server
echo "moving" >"$export/h"
[ "$(cat "$mnt/h")" = "moving" ] || fail "h reads otherwise"
mv "$export/h" "$export/h2"
if (cat "$mnt/h") >/dev/null 2>&1; then fail "the old name still opens"; fi
[ "$(cat "$mnt/h2")" = "moving" ] || fail "the new name reads otherwise"
echo "ok: a file renamed on the server: the old name gone, the new one read"

# 5. unlinked while open
head -c 300000 /dev/urandom >"$export/u"
cp "$export/u" "$tmp/u"
got=$(perl -e 'open(F, "+<", $ARGV[0]) or die "open: $!";
	unlink($ARGV[0]) or die "unlink: $!";
	print -e $ARGV[0] ? "still there " : "";
	open(M, "<", $ARGV[1]) or die; read(M, $m, 400000); close(M);
	sysseek(F, 0, 0); $n = sysread(F, $b, 400000);
	defined($n) or die "read: $!";
	print $b eq $m ? "read $n " : "read $n other bytes ";
	sysseek(F, 1000, 0); syswrite(F, "x" x 5000) == 5000 or die "write: $!";
	sysseek(F, 1000, 0); sysread(F, $b, 5000); print $b eq "x" x 5000 ? "rewritten " : "not rewritten ";
	use IO::Handle; F->sync or die "fsync: $!";
	close(F) or die "close: $!"; print "closed"' "$mnt/u" "$tmp/u" 2>&1)
[ "$got" = "read 300000 rewritten closed" ] || fail "a file unlinked while open: '$got'"
! left_on_export -e '^u$' -e '^\.clio-silly' >/dev/null ||
	fail "after the close the export holds: $(ls -A "$export" | tr '\n' ' ')"
echo "ok: a file unlinked while open is still read and written until its close, then gone"

# 6. renamed over while open
head -c 200000 /dev/urandom >"$export/t"
cp "$export/t" "$tmp/t"
echo "the new t" >"$export/s"
echo "soon gone" >"$export/gone"
[ "$(cat "$mnt/gone")" = "soon gone" ] || fail "gone reads otherwise"
rm "$export/gone" # the kernel's entry for it stays: the server refuses the rename
got=$(perl -e 'open(F, "+<", $ARGV[0]) or die "open: $!";
	rename($ARGV[3], $ARGV[0]) and die "a missing name renamed";
	-e $ARGV[0] or die "gone after a failed rename";
	rename($ARGV[2], $ARGV[0]) or die "rename: $!";
	open(M, "<", $ARGV[1]) or die; read(M, $m, 400000); close(M);
	sysseek(F, 0, 0); $n = sysread(F, $b, 400000); defined($n) or die "read: $!";
	print $b eq $m ? "read $n " : "read $n other bytes ";
	close(F) or die "close: $!"; print "closed"' "$mnt/t" "$tmp/t" "$mnt/s" "$mnt/gone" 2>&1)
[ "$got" = "read 200000 closed" ] || fail "a file renamed over while open: '$got'"
[ "$(cat "$mnt/t")" = "the new t" ] || fail "t is not the file renamed over it"
! left_on_export -e '^s$' -e '^\.clio-silly' >/dev/null ||
	fail "after the close the export holds: $(ls -A "$export" | tr '\n' ' ')"
echo "ok: a file renamed over while open is still read until its close, then gone"

# 7. two names, the last looked up removed
echo "two names" >"$mnt/l1"
ln "$mnt/l1" "$mnt/l2" || fail "ln through the mount"
[ "$(cat "$mnt/l2")" = "two names" ] || fail "l2 reads otherwise"
rm "$mnt/l2"
[ "$(cat "$mnt/l1" 2>&1)" = "two names" ] || fail "l1 after l2's removal: $(cat "$mnt/l1" 2>&1)"
[ "$(stat -c %s "$mnt/l1" 2>&1)" = 10 ] || fail "stat l1: $(stat -c %s "$mnt/l1" 2>&1)"
echo "ok: a file's other name still opens after one was removed"
nfs_umount "$mnt"

# 8. unlinked while open, the daemon ended by SIGTERM with it still open
nfs_mount "$mnt" "nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port"
daemon=$last_pid
echo "held open" >"$mnt/w"
exec 3<"$mnt/w" # held open by this shell (a background job might open it late)
rm "$mnt/w" || fail "rm of a file held open"
ls -A "$export" | grep -q '^\.clio-silly' || fail "no hidden name while the file is open"
kill -TERM "$daemon"
i=0
while kill -0 "$daemon" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
exec 3<&-
! kill -0 "$daemon" 2>/dev/null || fail "the daemon did not end 10 s after SIGTERM"
! ls -A "$export" | grep -q -e '^w$' -e '^\.clio-silly' ||
	fail "after the daemon's end the export holds: $(ls -A "$export" | tr '\n' ' ')"
echo "ok: a file unlinked while open leaves no hidden name when the daemon ends by SIGTERM"

# 9. open here, renamed away and removed on the server: past the
# attribute timeout (actimeo=1), fstat and read of the descriptors go on
# (the kernel asks for the attributes before a read), the name is gone,
# and a write lands in the renamed file
nfs_mount "$mnt" "nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port" -o actimeo=1
echo "rotated log" >"$mnt/log"
echo "removed" >"$mnt/gone"
python3 - "$mnt" "$export" >"$tmp/fd.out" 2>&1 <<'EOF'
import os, sys, time
m, e = sys.argv[1], sys.argv[2]
a = os.open(m + "/log", os.O_RDWR | os.O_APPEND)
b = os.open(m + "/gone", os.O_RDONLY)
os.rename(e + "/log", e + "/log.1")
os.unlink(e + "/gone")
time.sleep(1.3)
out = [os.fstat(a).st_size, os.pread(a, 100, 0), os.fstat(b).st_size, os.pread(b, 100, 0),
       os.path.exists(m + "/log")]
os.write(a, b"more\n")
os.close(a)
os.close(b)
print(out)
EOF
[ "$(cat "$tmp/fd.out")" = "[12, b'rotated log\\n', 8, b'removed\\n', False]" ] ||
	fail "descriptors of files renamed and removed on the server: $(cat "$tmp/fd.out")"
[ "$(cat "$export/log.1")" = "$(printf 'rotated log\nmore')" ] ||
	fail "the write after the rename: log.1 holds '$(cat "$export/log.1")'"
echo "ok: descriptors of files renamed or removed on the server go on with fstat, read and write"
nfs_umount "$mnt"

# 10. unlinked while open, then its directory renamed through the mount:
# the hidden name moved with it is removed at the close
nfs_mount "$mnt" "nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port"
mkdir "$mnt/sd" && echo "in a directory" >"$mnt/sd/f" || fail "mkdir sd"
exec 3<"$mnt/sd/f"
rm "$mnt/sd/f" && mv "$mnt/sd" "$mnt/sd2" || fail "rm, then mv of its directory"
[ "$(cat <&3)" = "in a directory" ] || fail "the descriptor after the directory's rename"
exec 3<&-
i=0
while [ -n "$(ls -A "$export/sd2")" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -z "$(ls -A "$export/sd2")" ] || fail "after the close sd2 holds: $(ls -A "$export/sd2" | tr '\n' ' ')"
nfs_umount "$mnt"
! grep -q "cannot remove" "$mnt.err" || fail "the daemon said: $(cat "$mnt.err")"
echo "ok: a hidden file whose directory was renamed is removed at its close"

# 11. names made in a directory while another process renames it back
# and forth through the mount: each mkdir, symlink and create succeeds
# (the object was made under the directory's name of the moment; its
# reply looked it up under the other and said EIO) and each is there
nfs_mount "$mnt" "nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port"
mkdir -p "$mnt/rg/p" || fail "mkdir rg/p"
(
	i=0
	while [ $i -lt 150 ]; do
		mv "$mnt/rg/p" "$mnt/rg/q" && mv "$mnt/rg/q" "$mnt/rg/p" || exit 1
		i=$((i + 1))
	done
) &
mover=$!
bad=$( cd "$mnt/rg/p" && i=0 && while [ $i -lt 150 ]; do
	mkdir "d$i" 2>&1 || echo "mkdir d$i failed"
	ln -s target "s$i" 2>&1 || echo "ln -s s$i failed"
	true >"f$i" 2>&1 || echo "create f$i failed"
	i=$((i + 1))
done )
wait $mover || fail "the renames through the mount failed"
[ -z "$bad" ] || fail "made in a directory being renamed: $(echo "$bad" | head -5)"
[ "$(ls "$export/rg/p" | wc -l)" -eq 450 ] ||
	fail "rg/p holds $(ls "$export/rg/p" | wc -l) names, not 450"
nfs_umount "$mnt"
echo "ok: names made in a directory renamed meanwhile through the mount"
