#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-fio.sh - fio's nbd engine, four jobs on four connections
# (multi-conn: nbdkit's log filter counts them), iodepth 16, random writes of 512 B to 64 KiB checked with
# verify=crc32c verify_fatal=1, against nbdkit-clio-filter.so over nbdkit's
# file plugin and against clio serve of a file, on a Unix socket.  Once
# the server stopped, fio reads the image file itself (psync,
# verify_only) so that the check does not go through clio; that pass is
# seen to fail on an image it did not write.  SEED=N repeats a run.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
command -v fio >/dev/null 2>&1 || { echo "fio not found (apt-get install fio)"; exit 77; }
fio --enghelp=nbd >/dev/null 2>&1 || { echo "fio lacks its nbd engine"; exit 77; }
nbd_with_clio
seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
fail_seed() { fail "$* (SEED=$seed)"; }

# job ENGINE-OPTIONS...: four jobs, each its own 4 MiB of the 16 MiB image
job() {
	fio --output="$tmp/fio.out" --name=w --rw=randwrite --bsrange=512-64k \
		--bs_unaligned=0 --blockalign=512 --iodepth=16 --numjobs=4 \
		--size=4m --offset_increment=4m --verify=crc32c --verify_fatal=1 \
		--randrepeat=1 --randseed="$seed" --verify_state_save=0 --group_reporting "$@"
}
# check NAME: fio reads the image file directly and verifies every block
check() {
	job --ioengine=psync --filename="$tmp/disk" --verify_only=1 ||
		{ cat "$tmp/fio.out"; fail_seed "$1: the image file does not hold what fio wrote"; }
	echo "ok: $1: the image file read back by fio itself (psync), verified"
}
# nbd NAME: fio's nbd engine against $uri, writes verified through NBD
nbd() {
	job --ioengine=nbd --uri="$uri" 2>"$tmp/fio.err" ||
		{ cat "$tmp/fio.out" "$tmp/fio.err"; fail_seed "$1: fio's nbd engine"; }
	grep -q 'jobs=4).*err= 0' "$tmp/fio.out" &&
		grep -q 'read:.*(16.0MiB/' "$tmp/fio.out" &&
		grep -q 'write:.*(16.0MiB/' "$tmp/fio.out" ||
		{ cat "$tmp/fio.out"; fail "$1: fio did not write and verify 16 MiB in four jobs"; }
	echo "ok: $1: fio nbd engine, 4 jobs on 4 connections, iodepth 16, crc32c verified"
}

# the check can fail: an image fio did not write
head -c 16777216 /dev/urandom >"$tmp/disk"
if job --ioengine=psync --filename="$tmp/disk" --verify_only=1 >/dev/null 2>&1; then
	fail_seed "fio's verify_only pass accepted an image it did not write"
fi
echo "ok: the read-back check fails on an image fio did not write"

# ------------------------------------------------------------ the filter
head -c 16777216 /dev/urandom >"$tmp/disk"
nbd_start --filter=log --filter="$filter" file "$tmp/disk" bsize=16k cache_size=8M \
	logfile="$tmp/log"
nbd "filter"
nbd_stop
conns=$(grep -c 'connection=.* Connect ' "$tmp/log")
# fio connects once per job to learn the size, then once per job to run
[ "$conns" -ge 4 ] || fail "filter: fio made $conns connections, not 4 or more"
check "filter"

# ------------------------------------------------------------ clio serve
head -c 16777216 /dev/urandom >"$tmp/disk"
rm -f "$tmp/serve.pid"
env $nbd_env "$CLIO" serve "$tmp/disk" -o bsize=64k,cache_size=8M \
	--socket "$sock" --pidfile "$tmp/serve.pid" || fail "clio serve did not start"
nbd_wait_pid "$tmp/serve.pid"
nbd "clio serve"
nbd_stop
check "clio serve"
exit 0
