#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-wronly.sh - clio mount of a directory by a daemon that may
# write a file but not read it (mode 0200), as in a user's own mount:
# the daemon runs without CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and
# CAP_FOWNER (setpriv), and so does the program, which on a local copy
# and through the mount, in each caching mode, must get the same: opens
# (O_WRONLY, O_TRUNC, O_APPEND; O_RDONLY and O_RDWR refused with
# EACCES), seeded random writes at random offsets (holes, overwrites,
# past the end), appends, ftruncate, copy_file_range from a readable
# file; on another uid's file of mode 0666, touch (taken) and setting
# times (EPERM); and the bytes each file holds at the end (read by
# root) must be the local ones, byte for byte.
set -e
. "$(dirname "$0")/mount-common.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "skip: dropping root's capabilities needs root" >&2
	exit 77
fi
for t in setpriv perl; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "skip: $t is missing" >&2
		exit 77
	fi
done
nocap() {
	setpriv --bounding-set=-dac_override,-dac_read_search,-fowner \
		--inh-caps=-dac_override,-dac_read_search,-fowner -- "$@"
}
seed=${SEED:-$$}

cat >"$tmp/run.pl" <<'PERL'
use strict;
use Fcntl;
use POSIX ();
my ($d, $seed) = @ARGV;
srand($seed);
$| = 1;
sub e { return $! + 0; }
sub try_open {
	my ($name, $flags) = @_;
	my $fh;
	if (sysopen($fh, $name, $flags)) { close($fh); return "ok"; }
	return e();
}
for my $f ("small", "big") {
	my $p = "$d/$f";
	for my $o ([ "rdonly", O_RDONLY ], [ "rdwr", O_RDWR ],
		   [ "wronly", O_WRONLY ], [ "wronly|append", O_WRONLY | O_APPEND ]) {
		print "$f open $o->[0]: ", try_open($p, $o->[1]), "\n";
	}
	sysopen(my $w, $p, O_WRONLY) or die "$p: $!";
	for my $i (1 .. 30) {
		my $len = 1 + int(rand(20000));
		my $off = int(rand(3000000));
		my $data = join("", map { chr(int(rand(256))) } 1 .. $len);
		sysseek($w, $off, 0) or die "seek: $!";
		my $n = syswrite($w, $data);
		print "$f write $i $off $len: ", (defined $n ? $n : "error " . e()), "\n";
	}
	print "$f ftruncate: ", (truncate($w, 2500000) ? "ok" : e()), "\n";
	close($w);
	sysopen($w, $p, O_WRONLY | O_APPEND) or die "$p append: $!";
	for my $i (1 .. 10) {
		my $len = 1 + int(rand(9000));
		my $data = join("", map { chr(int(rand(256))) } 1 .. $len);
		my $n = syswrite($w, $data);
		print "$f append $i $len: ", (defined $n ? $n : "error " . e()), "\n";
	}
	close($w);
	print "$f size: ", (stat($p))[7], "\n";
}
# copy_file_range(2) from a readable file into the write-only one
my %cfr_nr = (x86_64 => 326, aarch64 => 285);
my $cfr = $cfr_nr{(POSIX::uname())[4]};
if ($cfr) {
	sysopen(my $in, "$d/plain", O_RDONLY) or die "plain: $!";
	sysopen(my $out, "$d/big", O_WRONLY) or die "big: $!";
	sysseek($out, 100000, 0);
	my $n = syscall($cfr, fileno($in), 0, fileno($out), 0, 300000, 0);
	print "copy_file_range: ", ($n < 0 ? "error " . e() : $n), "\n";
	close($in);
	close($out);
}
# another's file open to all: touch (times to now) is taken, setting
# them refused (EPERM)
print "other touch: ", (utime(undef, undef, "$d/other") ? "ok" : e()), "\n";
print "other set times: ", (utime(5, 5, "$d/other") ? "ok" : e()), "\n";
print "other mtime moved: ", ((stat("$d/other"))[9] > 1000 ? 1 : 0), "\n";
sysopen(my $t, "$d/small", O_WRONLY | O_TRUNC) or die "trunc: $!";
print "trunc size: ", (stat("$d/small"))[7], "\n";
syswrite($t, "after O_TRUNC\n");
close($t);
PERL

head -c 1000000 /dev/urandom >"$tmp/pat"
head -c 400000 /dev/urandom >"$tmp/plain"
n=0
for o in "" kernel_cache=off cache=off; do
	n=$((n + 1))
	mkdir "$tmp/local$n" "$tmp/src$n" "$tmp/mnt$n"
	for d in "$tmp/local$n" "$tmp/src$n"; do
		printf 'write-only\n' >"$d/small"
		cp "$tmp/pat" "$d/big"
		cp "$tmp/plain" "$d/plain"
		echo other >"$d/other"
		chown 12345 "$d/other"
		chmod 666 "$d/other"
		touch -d @1000 "$d/other"
		chmod 200 "$d/small" "$d/big"
	done
	nocap perl "$tmp/run.pl" "$tmp/local$n" "$seed" >"$tmp/want" 2>&1 ||
		fail "the program on the local directory: $(tail -n 3 "$tmp/want")"
	grep -q '^small open rdonly: 13$' "$tmp/want" && grep -q '^small open wronly: ok$' "$tmp/want" ||
		fail "local reference: $(head -n 4 "$tmp/want")"
	run_as=nocap
	mount_start "$tmp/src$n" "$tmp/mnt$n" ${o:+-o $o}
	run_as=
	nocap perl "$tmp/run.pl" "$tmp/mnt$n" "$seed" >"$tmp/got" 2>&1 || true
	mount_stop "$tmp/mnt$n"
	if ! diff "$tmp/want" "$tmp/got" >"$tmp/diff"; then
		head -n 20 "$tmp/diff" >&2
		fail "${o:-default}: a write-only file behaves otherwise than locally (seed $seed)"
	fi
	for f in small big; do
		cmp "$tmp/local$n/$f" "$tmp/src$n/$f" ||
			fail "${o:-default}: the source's $f differs from the local one (seed $seed)"
	done
	echo "ok: ${o:-default}: $(grep -c . "$tmp/got") results as locally, the files byte for byte"
done
