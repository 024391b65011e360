#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-sigterm.sh - SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2
# or SIGALRM (which killed it, losing the data) to the daemon while a
# program still holds a file open with data it wrote (not closed, not
# fsync'd: with the kernel's writeback cache the data is still in the
# kernel's pages, not yet sent to the daemon): the daemon ends, unmounted,
# with status 0, and the source holds every byte, as a local file system
# would after the program's write(2) returned.  A directory with
# kernel_cache on and off, and an image file (the file disk).  And a
# daemon whose mount was unmounted here but lives on in a mount namespace
# made meanwhile ends at SIGTERM too.
set -e
. "$(dirname "$0")/mount-common.sh"
if ! command -v perl >/dev/null 2>&1; then
	echo "skip: perl is missing" >&2
	exit 77
fi
src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt"
head -c 3000000 /dev/urandom >"$tmp/pat"
head -c 4194304 /dev/zero >"$tmp/img"

# hold FILE SIG: write the pattern into FILE (at 0, no truncation), send
# SIG to the daemon with FILE still open, wait for the daemon
hold() {
	perl -e 'open(P, "<", $ARGV[0]) or die; local $/; $d = <P>;
		open(F, "+<", $ARGV[1]) or open(F, "+>", $ARGV[1]) or die "$ARGV[1]: $!";
		syswrite(F, $d) == length($d) or die "write: $!";
		kill($ARGV[2], $ARGV[3]) or die "kill: $!";
		# open until the daemon is gone (at most 10 s); the close fails
		for ($i = 0; $i < 200 && kill(0, $ARGV[3]); $i++) {
			select(undef, undef, undef, 0.05);
		}
		close(F);' "$tmp/pat" "$1" "$2" "$mount_pid"
	rc=0
	wait "$mount_pid" || rc=$?
	mount_pid=
	[ "$rc" -eq 0 ] || { cat "$tmp/mount.err" >&2; fail "SIG$2: the daemon exited $rc"; }
	if grep -qF " $mnt fuse" /proc/mounts; then
		fail "SIG$2: still mounted"
	fi
}

for sig in TERM INT HUP QUIT USR1 USR2 ALRM; do
	for kc in on off; do
		mount_start "$src" "$mnt" -o kernel_cache=$kc
		hold "$mnt/f$sig$kc" $sig
		cmp "$tmp/pat" "$src/f$sig$kc" ||
			fail "SIG$sig, kernel_cache=$kc: data written before the signal is lost"
	done
	echo "ok: SIG$sig: the data of a file still open is on the source"
done
mount_start "$tmp/img" "$mnt"
hold "$mnt/disk" TERM
cmp -n 3000000 "$tmp/pat" "$tmp/img" || fail "disk: data written before SIGTERM is lost"
echo "ok: SIGTERM: the disk's data written before it is in the image"

# a file open for writing that lost the name it was opened by but keeps
# another (a hard link, then the first name removed): its data was lost,
# as the daemon looked for the file by the first name only
for kc in on off; do
	mkdir -p "$tmp/src/d"
	mount_start "$tmp/src" "$mnt" -o kernel_cache=$kc
	perl -e 'open(P, "<", $ARGV[0]) or die; local $/; $d = <P>;
		open(F, "+>", "$ARGV[1]/d/a") or die "$ARGV[1]/d/a: $!";
		syswrite(F, $d, 1000000) == 1000000 or die "write: $!";
		link("$ARGV[1]/d/a", "$ARGV[1]/b") or die "link: $!";
		unlink("$ARGV[1]/d/a") or die "unlink: $!";
		syswrite(F, $d, length($d) - 1000000, 1000000) ==
			length($d) - 1000000 or die "write: $!";
		kill("TERM", $ARGV[2]) or die "kill: $!";
		for ($i = 0; $i < 200 && kill(0, $ARGV[2]); $i++) {
			select(undef, undef, undef, 0.05);
		}
		close(F);' "$tmp/pat" "$mnt" "$mount_pid"
	rc=0
	wait "$mount_pid" || rc=$?
	mount_pid=
	[ "$rc" -eq 0 ] || { cat "$tmp/mount.err" >&2; fail "hard link, kernel_cache=$kc: the daemon exited $rc"; }
	cmp "$tmp/pat" "$tmp/src/b" ||
		fail "SIGTERM, kernel_cache=$kc: the data of a file open under its other name is lost"
	rm -f "$tmp/src/b"
done
echo "ok: SIGTERM: the data of a file open under a name since removed is under its other name"

# a file open for writing deep under the mount: its path from the mount
# point longer than PATH_MAX (its data was lost: the daemon's open of it
# by that path failed), once with the source's path of it shorter (a
# long mount point), once longer too
long=$tmp/$(printf 'm%.0s' $(seq 200))
cdir=$tmp/src/$(printf 'c%.0s' $(seq 200))
mkdir "$long"
for depth in 4050 8000; do
	rm -rf "$cdir"
	mount_start "$tmp/src" "$long"
	perl -e 'open(P, "<", $ARGV[0]) or die; local $/; $d = <P>;
		chdir($ARGV[1]) or die "$ARGV[1]: $!";
		$c = "c" x 200;
		for ($l = 0; $l + 201 < $ARGV[2]; $l += 201) {
			mkdir($c) or die "mkdir: $!";
			chdir($c) or die "chdir: $!";
		}
		open(F, "+>", "f") or die "f: $!";
		syswrite(F, $d) == length($d) or die "write: $!";
		kill("TERM", $ARGV[3]) or die "kill: $!";
		for ($i = 0; $i < 200 && kill(0, $ARGV[3]); $i++) {
			select(undef, undef, undef, 0.05);
		}
		close(F);' "$tmp/pat" "$long" "$depth" "$mount_pid"
	rc=0
	wait "$mount_pid" || rc=$?
	mount_pid=
	[ "$rc" -eq 0 ] || { cat "$tmp/mount.err" >&2; fail "deep file, $depth: the daemon exited $rc"; }
	perl -e 'open(P, "<", $ARGV[0]) or die; local $/; $d = <P>;
		chdir($ARGV[1]) or die;
		while (-d ("c" x 200)) { chdir("c" x 200) or die "chdir: $!"; }
		open(F, "<", "f") or die "f: $!"; $g = <F>;
		exit($g eq $d ? 0 : 1);' "$tmp/pat" "$tmp/src" ||
		fail "SIGTERM: the data of a file $depth bytes deep under the mount is lost"
done
rm -rf "$cdir"
echo "ok: SIGTERM: the data of a file deeper than PATH_MAX under the mount is on the source"

# a mount unmounted here but alive in a mount namespace made meanwhile
# (its copy there): no request comes any more, SIGTERM still ends it
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null 2>&1; then
	ns_pid=
	trap 'cleanup; [ -n "$ns_pid" ] && kill "$ns_pid" 2>/dev/null; true' EXIT
	mount_start "$src" "$mnt"
	unshare -m --propagation private sleep 30 &
	ns_pid=$!
	sleep 0.3
	fusermount3 -u "$mnt" || fail "fusermount3 -u"
	kill -TERM "$mount_pid"
	i=0
	while kill -0 "$mount_pid" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 50 ] || fail "SIGTERM: the daemon of a mount alive elsewhere stays"
		sleep 0.1
	done
	rc=0
	wait "$mount_pid" || rc=$?
	mount_pid=
	[ "$rc" -eq 0 ] || fail "SIGTERM, the mount alive elsewhere: the daemon exited $rc"
	kill "$ns_pid"
	wait "$ns_pid" 2>/dev/null || true
	ns_pid=
	echo "ok: SIGTERM ends a daemon whose mount lives on in another namespace"
fi
