#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-mount-consist.sh - two clients of one export: two `clio mount
# nfs://...` of NFS-Ganesha's export in the test's namespace.
#  - close-to-open: B sees A's write (in place, same size; and a growth)
#    as soon as A has closed and B opens;
#  - without a close or reopen: B holds the file open and rereads it, A
#    writes in place and fsyncs, still open; B sees it within its
#    attribute timeout (B mounted with -o actimeo=1 to keep this short; the
#    default acregmax is 60 s): at most 3 s;
#  - nocto,actimeo=30: a reopen within the timeout still shows the old
#    data (what nocto gives up);
#  - lease, through tests/tools/rpcproxy counting RPCs by procedure: a
#    file written through the lease mount is not written back at close (no
#    WRITE on the wire), 50 opens, reads and closes send no GETATTR, no
#    LOOKUP, no ACCESS (against >= 50 GETATTRs for 50 opens close-to-open),
#    the data read is right, and after the unmount it is on the server
#    (the close-to-open mount of the comparison starts only then, so
#    that none of its RPCs is counted against the lease mount).
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"
. "$(dirname "$0")/nfs-mount-common.sh"

ganesha_start
url="nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port"
a=$tmp/a b=$tmp/b
nfs_mount "$a" "$url"
nfs_mount "$b" "$url" -o actimeo=1

# ------------------------------------------------------- close-to-open
head -c 100000 /dev/urandom >"$tmp/v1"
cp "$tmp/v1" "$a/f"
cmp "$tmp/v1" "$b/f" || fail "B does not see A's new file"
head -c 100000 /dev/urandom >"$tmp/v2"
dd if="$tmp/v2" of="$a/f" bs=100000 conv=notrunc status=none
cmp "$tmp/v2" "$b/f" || fail "close-to-open: B's open after A's close shows old data"
head -c 5000 /dev/urandom >>"$a/f"
cat "$tmp/v2" >"$tmp/v2b"
tail -c 5000 "$export/f" >>"$tmp/v2b"
cmp "$tmp/v2b" "$b/f" || fail "close-to-open: B does not see the file grown by A"
dd if="$tmp/v2" of="$a/f" bs=100000 conv=notrunc status=none
truncate -s 100000 "$a/f"
cmp "$tmp/v2" "$b/f" || fail "close-to-open: B does not see the file cut by A"
echo "ok: close-to-open: B sees A's writes at its next open (in place, grown, cut)"

# -------------------------------------------------- without a close
head -c 100000 /dev/urandom >"$tmp/v3"
python3 - "$b/f" "$tmp/v2" "$tmp/v3" "$tmp/ready" "$tmp/seen" <<'PY' &
import os, sys, time
f, old, new, ready, seen = sys.argv[1:]
old, new = open(old, 'rb').read(), open(new, 'rb').read()
fd = os.open(f, os.O_RDONLY)
if os.pread(fd, len(old) + 1, 0) != old:
    sys.exit("B: the first read is not the old data")
open(ready, 'w').close()
while not os.path.exists(ready + '.go'):
    time.sleep(0.01)
t0 = time.monotonic()
while time.monotonic() - t0 < 10:
    d = os.pread(fd, len(new) + 1, 0)
    if d == new:
        open(seen, 'w').write('%.2f\n' % (time.monotonic() - t0))
        sys.exit(0)
    if d != old:
        sys.exit("B: neither the old nor the new data")
    time.sleep(0.05)
sys.exit("B: the new data not seen in 10 s")
PY
reader=$!
i=0
while [ ! -e "$tmp/ready" ]; do
	kill -0 $reader 2>/dev/null || fail "the reader on B died"
	sleep 0.02
done
python3 - "$a/f" "$tmp/v3" "$tmp/ready.go" <<'PY' || fail "the writer on A failed"
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.pwrite(fd, open(sys.argv[2], 'rb').read(), 0)
os.fsync(fd)
open(sys.argv[3], 'w').close()
os.close(fd)
PY
wait $reader || fail "without a reopen B did not see A's write"
in_range "seconds until B, without a reopen, saw A's fsynced write (actimeo=1)" \
	"$(cat "$tmp/seen")" 0 3

# --------------------------------------------------------------- nocto
c=$tmp/c
nfs_mount "$c" "$url" -o nocto,actimeo=30
cmp "$tmp/v3" "$c/f" || fail "nocto: C's first read"
dd if="$tmp/v1" of="$a/f" bs=100000 conv=notrunc status=none
cmp "$tmp/v1" "$b/f" || fail "B after A's close"
cmp "$tmp/v3" "$c/f" || fail "nocto,actimeo=30: the reopen within 30 s did not show the cached data"
echo "ok: nocto,actimeo=30: a reopen within the timeout shows the cached data"
nfs_umount "$c"
nfs_umount "$b"
nfs_umount "$a"

# --------------------------------------------------------------- lease
proxy_start 0
purl="nfs://127.0.0.1$export?$pq"
l=$tmp/l
nfs_mount "$l" "$purl" -o lease
head -c 300000 /dev/urandom >"$tmp/g"
proxy_counts "$tmp/n0"
cp "$tmp/g" "$l/g"
cmp "$tmp/g" "$l/g" || fail "lease: the file reads back different"
proxy_counts "$tmp/n1"
w=$(( $(rpc_calls "$tmp/n1" nfs3 WRITE) - $(rpc_calls "$tmp/n0" nfs3 WRITE) ))
[ "$w" -eq 0 ] || fail "lease: $w WRITEs at close (none expected: no write-back on close)"
[ ! -s "$export/g" ] || fail "lease: the data is on the server before any write-back"
echo "ok: lease: a written file is not written back at close (0 WRITEs)"
for i in $(seq 50); do cat "$l/g" >/dev/null; done
cmp "$tmp/g" "$l/g" || fail "lease: the 51st read differs"
proxy_counts "$tmp/n2"
sent=""
for p in GETATTR LOOKUP ACCESS; do
	d=$(( $(rpc_calls "$tmp/n2" nfs3 $p) - $(rpc_calls "$tmp/n1" nfs3 $p) ))
	[ "$d" -eq 0 ] || sent="$sent $d ${p}s"
done
[ -z "$sent" ] || fail "lease:$sent for 51 opens after the first (none expected); all RPCs: $(cat "$tmp/n2")"
echo "ok: lease: 51 opens, reads and closes: 0 GETATTR, 0 LOOKUP, 0 ACCESS"
nfs_umount "$l"
cmp "$tmp/g" "$export/g" || fail "lease: after the unmount the export's file differs"
echo "ok: lease: written back at the unmount"
# mounted only now, so that nothing of its own start reaches the proxy
# while the lease mount's RPCs are counted
nfs_mount "$c" "$purl"
cmp "$tmp/g" "$c/g" || fail "close-to-open mount: first read"
proxy_counts "$tmp/n3"
for i in $(seq 50); do cat "$c/g" >/dev/null; done
proxy_counts "$tmp/n4"
d=$(( $(rpc_calls "$tmp/n4" nfs3 GETATTR) - $(rpc_calls "$tmp/n3" nfs3 GETATTR) ))
[ "$d" -ge 50 ] || fail "close-to-open: $d GETATTRs for 50 opens (one each expected)"
echo "ok: close-to-open: $d GETATTRs for 50 opens"
nfs_umount "$c"
exit 0
