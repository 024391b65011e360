#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-append.sh - clio mount of a directory holding append-only
# files (chattr +a: a small one and one of 2 MiB, past the mount's small
# file size), in each caching mode (default, kernel_cache=off,
# cache=off): the same program run on a local copy and through the mount
# must print the same, byte for byte: the errno of every open that the
# source refuses (O_WRONLY, O_RDWR and O_TRUNC without O_APPEND: EPERM)
# or takes (O_APPEND), of truncate and ftruncate (EPERM), of touch
# (times set to now: taken) and of setting times or the mode (EPERM), then seeded
# random appends (1 to 9000 bytes, some after an lseek to 0, which
# O_APPEND ignores), with a reader open meanwhile re-reading the whole
# file from 0 and stat's size, a second writer O_RDWR|O_APPEND reading
# through its own descriptor (and copy_file_range from it to a plain
# file, and onto it: EBADF), and at the end the whole file (its md5)
# as a fresh open reads it and as the source holds it.
set -e
. "$(dirname "$0")/mount-common.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "skip: chattr +a needs root" >&2
	exit 77
fi
for t in chattr perl; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "skip: $t is missing" >&2
		exit 77
	fi
done
: >"$tmp/probe"
if ! chattr +a "$tmp/probe" 2>/dev/null; then
	echo "skip: the test's file system takes no append-only flag" >&2
	exit 77
fi
chattr -a "$tmp/probe"
seed=${SEED:-$$}
trap 'cleanup_all' EXIT
cleanup_all() {
	set +e
	for d in "$tmp"/local* "$tmp"/src*; do
		[ -d "$d" ] && chattr -a "$d"/* 2>/dev/null
	done
	cleanup
}

# the program: run DIR SEED (perl, so errnos come out as numbers)
cat >"$tmp/run.pl" <<'PERL'
use strict;
use Fcntl;
use POSIX ();
use Digest::MD5 qw(md5_hex);
my ($d, $seed) = @ARGV;
srand($seed);
$| = 1;
# copy_file_range(2)'s number, where known
my %cfr_nr = (x86_64 => 326, aarch64 => 285);
my $cfr = $cfr_nr{(POSIX::uname())[4]};
sub e { return $! + 0; }
sub try_open {
	my ($name, $flags) = @_;
	my $fh;
	if (sysopen($fh, $name, $flags)) { close($fh); return "ok"; }
	return e();
}
sub whole {
	my ($fh) = @_;
	my ($all, $buf, $off) = ("", "", 0);
	for (;;) {
		my $n = sysread($fh, $buf, 65536);
		die "read: $!" unless defined $n;
		last if $n == 0;
		$all .= $buf;
	}
	return length($all) . " " . md5_hex($all);
}
sub fresh {
	my ($name) = @_;
	open(my $fh, "<", $name) or return "open " . e();
	return whole($fh);
}
for my $f ("a", "big") {
	my $p = "$d/$f";
	for my $o ([ "wronly", O_WRONLY ], [ "rdwr", O_RDWR ],
		   [ "wronly|trunc", O_WRONLY | O_TRUNC ],
		   [ "rdonly|trunc", O_RDONLY | O_TRUNC ],
		   [ "wronly|append|trunc", O_WRONLY | O_APPEND | O_TRUNC ],
		   [ "wronly|append", O_WRONLY | O_APPEND ],
		   [ "rdwr|append", O_RDWR | O_APPEND ],
		   [ "rdonly", O_RDONLY ]) {
		print "$f open $o->[0]: ", try_open($p, $o->[1]), "\n";
	}
	print "$f truncate: ", (truncate($p, 0) ? "ok" : e()), "\n";
	print "$f touch: ", (utime(undef, undef, $p) ? "ok" : e()), "\n";
	print "$f set times: ", (utime(5, 5, $p) ? "ok" : e()), "\n";
	print "$f chmod: ", (chmod(0600, $p) ? "ok" : e()), "\n";
	sysopen(my $r, $p, O_RDONLY) or die "$p: $!";
	sysopen(my $w, $p, O_WRONLY | O_APPEND) or die "$p: $!";
	print "$f reader: ", whole($r), "\n";
	print "$f ftruncate: ", (truncate($w, 0) ? "ok" : e()), "\n";
	for my $i (1 .. 40) {
		my $len = 1 + int(rand(9000));
		my $data = join("", map { chr(int(rand(256))) } 1 .. $len);
		sysseek($w, 0, 0) if $i % 7 == 0;
		my $n = syswrite($w, $data);
		print "$f append $i $len: ", (defined $n ? $n : "error " . e()), "\n";
		if ($i % 5 == 0) {
			sysseek($r, 0, 0);
			print "$f reread $i: ", whole($r), " size ", (stat($p))[7], "\n";
		}
	}
	close($w);
	sysopen(my $rw, $p, O_RDWR | O_APPEND) or die "$p rdwr|append: $!";
	print "$f rdwr reads: ", whole($rw), "\n";
	syswrite($rw, "tail of $f\n") == length("tail of $f\n") or die "$p: $!";
	sysseek($rw, 0, 0);
	print "$f rdwr reads again: ", whole($rw), "\n";
	if ($cfr) {
		# copy_file_range from its descriptor (at 0) to a plain file,
		# and from that onto the append-only one (EBADF)
		sysseek($rw, 0, 0);
		sysopen(my $c, "$d/copy-$f", O_RDWR | O_CREAT | O_TRUNC, 0644) or die "copy: $!";
		my $n = syscall($cfr, fileno($rw), 0, fileno($c), 0, 100000, 0);
		print "$f copy_file_range out: ", ($n < 0 ? "error " . e() : $n), "\n";
		sysseek($c, 0, 0);
		print "$f copy: ", whole($c), "\n";
		sysseek($c, 0, 0);
		$n = syscall($cfr, fileno($c), 0, fileno($rw), 0, 100, 0);
		print "$f copy_file_range in: ", ($n < 0 ? "error " . e() : $n), "\n";
		close($c);
	}
	close($rw);
	sysseek($r, 0, 0);
	print "$f reader at the end: ", whole($r), "\n";
	close($r);
	print "$f fresh: ", fresh($p), "\n";
}
PERL

# prepare DIR: the files, append-only
prepare() {
	mkdir "$1"
	printf 'first line\n' >"$1/a"
	head -c 2097152 "$tmp/pat" >"$1/big"
	chattr +a "$1/a" "$1/big"
}

head -c 2097152 /dev/urandom >"$tmp/pat"
n=0
for o in "" kernel_cache=off cache=off; do
	n=$((n + 1))
	prepare "$tmp/local$n"
	prepare "$tmp/src$n"
	mkdir "$tmp/mnt$n"
	perl "$tmp/run.pl" "$tmp/local$n" "$seed" >"$tmp/want" 2>&1 ||
		fail "the program on the local directory: $(tail -n 3 "$tmp/want")"
	grep -q '^a open wronly: 1$' "$tmp/want" && grep -q '^a open wronly|append: ok$' "$tmp/want" ||
		fail "local reference: $(head -n 8 "$tmp/want")"
	mount_start "$tmp/src$n" "$tmp/mnt$n" ${o:+-o $o}
	perl "$tmp/run.pl" "$tmp/mnt$n" "$seed" >"$tmp/got" 2>&1 || true
	mount_stop "$tmp/mnt$n"
	if ! diff "$tmp/want" "$tmp/got" >"$tmp/diff"; then
		head -n 20 "$tmp/diff" >&2
		fail "${o:-default}: append-only files behave otherwise than locally (seed $seed)"
	fi
	for f in a big; do
		cmp "$tmp/local$n/$f" "$tmp/src$n/$f" ||
			fail "${o:-default}: the source's $f differs from the local one (seed $seed)"
	done
	echo "ok: ${o:-default}: $(grep -c . "$tmp/got") lines as locally, $(stat -c %s "$tmp/src$n/big") bytes in big"
done
