#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-mount-dead.sh - `clio mount nfs://` when NFS-Ganesha dies
# (SIGKILL) and comes back later:
#  1. a file open through the mount, 1 MB written: its fsync fails within
#     timeo= (2 s) and a little (the device's deadline) instead of
#     waiting for the server;
#  2. listing the root and looking up a name fail (EIO) at once instead
#     of waiting forever (the names' libnfs context gives a lost
#     connection up);
#  3. once the server is back, names and data work again (the context
#     made anew): the listing is the export's, a file written through
#     the mount is on the export byte for byte, and the unmount writes
#     back what the failed fsync kept dirty (the daemon's exit status
#     may report the earlier failure to its own handle);
#  4. the server stopped (SIGSTOP, the connection kept): ls, a lookup
#     and a create fail with ETIMEDOUT within a few timeo= (not EINTR,
#     which programs retry, after libnfs's own 30 s), and work again once
#     it goes on;
#  5. the end of a lease mount with 6 dirty files, the server stopped:
#     the daemon ends within a few timeo= (not a few per file), exits
#     non-zero and names each file whose write-back failed.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"
. "$(dirname "$0")/nfs-mount-common.sh"
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 is missing" >&2; exit 77; }

ganesha_start
url="nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port&timeo=2"
m=$tmp/mnt
nfs_mount "$m" "$url" -o bsize=16k,cache_size=8M
head -c 300000 /dev/urandom >"$tmp/a"
cp "$tmp/a" "$m/a"
cmp "$tmp/a" "$export/a" || fail "a file written through the mount differs on the export"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ------------------------------------------------------------ 1
head -c 1048576 /dev/urandom >"$tmp/b"
python3 - "$m/b" "$tmp/b" "$tmp/killed" >"$tmp/py.out" 2>&1 <<'EOF' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, open(sys.argv[2], "rb").read())
open(sys.argv[3] + ".ready", "w").close()
while not os.path.exists(sys.argv[3]):
    time.sleep(0.02)
t = time.monotonic()
try:
    os.fsync(fd)
    print("fsync ok %d" % ((time.monotonic() - t) * 1000))
except OSError as e:
    print("fsync errno %d %d" % (e.errno, (time.monotonic() - t) * 1000))
try:
    os.close(fd)
except OSError as e:
    print("close errno %d" % e.errno)
EOF
py_pid=$!
i=0
while [ ! -e "$tmp/killed.ready" ]; do
	kill -0 "$py_pid" 2>/dev/null || fail "the writer ended early: $(cat "$tmp/py.out")"
	[ $i -lt 200 ] || fail "the writer did not write 1 MB in 10 s"
	sleep 0.05; i=$((i + 1))
done
ganesha_kill
touch "$tmp/killed"
i=0
while kill -0 "$py_pid" 2>/dev/null && [ $i -lt 200 ]; do
	sleep 0.05; i=$((i + 1))
done
kill -0 "$py_pid" 2>/dev/null && { kill -9 "$py_pid"; fail "fsync still waits 10 s after the server was killed"; }
wait "$py_pid"
read -r what status ms <"$tmp/py.out" || fail "the writer said nothing"
[ "$what $status" != "fsync ok" ] || fail "fsync succeeded with the server killed"
[ "$what" = fsync ] && [ "$status" = errno ] || fail "the writer: $(cat "$tmp/py.out")"
set -- $(head -n 1 "$tmp/py.out")
[ "$4" -le 5000 ] || fail "fsync failed only after $4 ms (timeo=2)"
echo "ok: fsync through the mount, server killed: errno $3 after $4 ms"

# ------------------------------------------------------------ 2
t0=$(now_ms)
rc=0
timeout 10 ls "$m" >/dev/null 2>"$tmp/ls.err" || rc=$?
ms=$(($(now_ms) - t0))
[ "$rc" -ne 124 ] || fail "ls of the mount still waits 10 s after the server was killed"
[ "$rc" -ne 0 ] || fail "ls of the mount succeeded with the server killed"
[ "$ms" -le 5000 ] || fail "ls failed only after $ms ms"
echo "ok: ls, server killed: failed after $ms ms: $(head -n 1 "$tmp/ls.err")"
rc=0
timeout 10 stat "$m/nothere" >/dev/null 2>&1 || rc=$?
[ "$rc" -ne 124 ] || fail "a lookup still waits 10 s after the server was killed"
[ "$rc" -ne 0 ] || fail "a lookup of a missing name succeeded"
echo "ok: a lookup, server killed: failed (status $rc)"

# ------------------------------------------------------------ 3
ganesha_start
ls "$m" >"$tmp/ls.out" 2>"$tmp/ls.err" || fail "ls after the server came back: $(cat "$tmp/ls.err")"
ls "$export" | grep -v '^\.clio' >"$tmp/ls.want"
grep -v '^\.clio' "$tmp/ls.out" | cmp -s - "$tmp/ls.want" ||
	fail "the listing after the server came back: $(cat "$tmp/ls.out")"
head -c 200000 /dev/urandom >"$tmp/c"
cp "$tmp/c" "$m/c" || fail "writing a new file after the server came back"
cmp "$tmp/c" "$export/c" || fail "the new file differs on the export"
cmp "$tmp/a" "$m/a" || fail "the old file reads back differently"
echo "ok: the server back: names and data work again"

# ------------------------------------------------------------ 4
kill -STOP "$ganesha_pid"
hung() { # WHAT CMD...: fails within a few timeo with ETIMEDOUT, not EINTR
	_what=$1
	shift
	t0=$(now_ms)
	rc=0
	timeout 20 "$@" >/dev/null 2>"$tmp/hung.err" || rc=$?
	ms=$(($(now_ms) - t0))
	[ "$rc" -ne 124 ] || { kill -CONT "$ganesha_pid"; fail "$_what: still waits 20 s for a stopped server"; }
	[ "$rc" -ne 0 ] || { kill -CONT "$ganesha_pid"; fail "$_what succeeded with the server stopped"; }
	grep -q "timed out" "$tmp/hung.err" ||
		{ kill -CONT "$ganesha_pid"; fail "$_what: not ETIMEDOUT: $(cat "$tmp/hung.err")"; }
	[ "$ms" -le 7000 ] || { kill -CONT "$ganesha_pid"; fail "$_what failed only after $ms ms (timeo=2)"; }
	echo "ok: $_what, server stopped: failed after $ms ms: $(head -n 1 "$tmp/hung.err")"
}
hung "ls" ls "$m"
hung "a lookup" stat "$m/nothere"
hung "a create" touch "$m/new"
kill -CONT "$ganesha_pid"
ls "$m" >"$tmp/ls.out" 2>"$tmp/ls.err" || fail "ls after the server went on: $(cat "$tmp/ls.err")"
cmp "$tmp/c" "$m/c" || fail "c reads back differently after the server went on"
echo "ok: the server goes on: names and data work again"
# the daemon may exit non-zero: its own handle of b was open at the
# failure, which it reports at the end (libclio(3): once to each handle)
"$CLIO" umount "$m" || { cat "$m.err" >&2; fail "clio umount $m"; }
wait "$last_pid" || echo "the daemon exited $?: $(tail -n 1 "$m.err")"
nfs_mounts=""
cmp "$tmp/b" "$export/b" || fail "the data of the failed fsync is not on the export after the unmount"
echo "ok: the unmount wrote back what the failed fsync kept dirty"

# ------------------------------------------------------------ 5
# the end of a mount with dirty files on a stopped server: their
# write-backs wait together (and a failed reconnection is not tried
# again by each call of the same close), not a few timeo each, one file
# after the other (6 files took 42 s)
m2=$tmp/mnt2
nfs_mount "$m2" "$url" -o lease,bsize=16k,cache_size=16M
for i in 1 2 3 4 5 6; do
	head -c 100000 /dev/urandom >"$m2/d$i" || fail "writing d$i"
done
kill -STOP "$ganesha_pid"
t0=$(now_ms)
fusermount3 -u "$m2" || { kill -CONT "$ganesha_pid"; fail "fusermount3 -u $m2"; }
i=0 ended=0
while [ $i -lt 300 ]; do
	running "$last_pid" || { ended=1; break; }
	sleep 0.05; i=$((i + 1))
done
ms=$(($(now_ms) - t0))
if [ $ended -eq 0 ]; then
	kill -CONT "$ganesha_pid"
	cat "$m2.err" >&2
	fail "the daemon still writes back 15 s after the unmount (6 dirty files, timeo=2)"
fi
rc=0
wait "$last_pid" || rc=$?
kill -CONT "$ganesha_pid"
nfs_mounts=""
[ "$rc" -ne 0 ] || fail "the daemon exited 0 with 6 files not written back"
for i in 1 2 3 4 5 6; do
	grep -q "/d$i?.*write-back: Connection timed out" "$m2.err" ||
		fail "the daemon did not report d$i's write-back: $(cat "$m2.err")"
done
[ "$ms" -le 10000 ] || fail "the daemon ended $ms ms after the unmount (6 dirty files, timeo=2)"
echo "ok: the end of a mount, 6 dirty files, server stopped: exit $rc after $ms ms, each file reported"
exit 0
