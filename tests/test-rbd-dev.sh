#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-rbd-dev.sh - clio's RBD backend against a one-node Ceph cluster
# (tests/ceph-common.sh): writes at unaligned offsets and sizes through
# clio dd land byte for byte where `rbd export` finds them, and read back
# the same through clio; clio info shows the image's object size (an
# image of 1 MiB objects beside one of librbd's default); 4 KiB writes
# reach the cluster as large ones (the device statistics of clio dd
# --json, and the OSD's own write counters from its admin socket);
# ftruncate resizes the image (clio dd's seek= without notrunc, both
# ways); a snapshot opens read-only, reads the data of its time and
# refuses writes with a clear error; an image shrunk by another client
# while clio has it open: a write across or past its new end (which
# librbd clips silently or refuses) grows it again and lands whole, a read
# past it reads zeros; bad device strings, a missing pool or image fail
# with one line naming them.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ceph-common.sh"

ceph_start 32M
u=$(ceph_uri)
seed=${CLIO_SEED:-$(date +%s)}
echo "seed $seed"

# image_size IMAGE: its size as librbd's own tool says
image_size() {
	rbd info "rbd/$1" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["size"])'
}

# ------------------------------------------------------------ round trips
# the reference: what the image must hold (a new image reads as zeros)
head -c 33554432 /dev/zero >"$tmp/ref"
head -c 4194304 /dev/urandom >"$tmp/pat"
# offset length block size, unaligned to anything; the pattern from a
# seeded offset
python3 - "$seed" >"$tmp/ops" <<'PY'
import random, sys
r = random.Random(int(sys.argv[1]))
ops = [(0, 1, 1), (511, 3000, 1000), (4095, 70001, 4096), (1048575, 1048577, 65536),
       (33554432 - 777, 777, 100)]
for _ in range(8):
    n = r.randint(1, 600000)
    ops.append((r.randint(0, 33554432 - n), n, r.choice([1000, 4096, 12345, 65536])))
for off, n, bs in ops:
    print(off, n, bs, r.randint(0, 4194304 - n))
PY
while read -r off n bs poff; do
	"$CLIO" dd if="$tmp/pat" of="$u" bs="$bs" skip="$poff" seek="$off" count="$n" \
		iflag=skip_bytes,count_bytes oflag=seek_bytes conv=notrunc,fsync \
		status=none 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "clio dd of $n bytes at $off (bs=$bs)"; }
	dd if="$tmp/pat" of="$tmp/ref" bs="$bs" skip="$poff" seek="$off" count="$n" \
		iflag=skip_bytes,count_bytes oflag=seek_bytes conv=notrunc status=none ||
		fail "dd of the reference"
done <"$tmp/ops"
rbd export rbd/img "$tmp/export" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "rbd export rbd/img"; }
cmp "$tmp/ref" "$tmp/export" || fail "rbd export differs from what clio dd wrote (seed $seed)"
echo "ok: $(wc -l <"$tmp/ops") writes at unaligned offsets and sizes, byte for byte in rbd export"
# read back through clio at unaligned places
while read -r off n bs poff; do
	"$CLIO" dd if="$u" of="$tmp/back" bs="$bs" skip="$off" count="$n" \
		iflag=skip_bytes,count_bytes status=none 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "clio dd of $n bytes from $off"; }
	dd if="$tmp/ref" bs="$bs" skip="$off" count="$n" iflag=skip_bytes,count_bytes \
		status=none | cmp - "$tmp/back" ||
		fail "$n bytes read at $off differ (seed $seed)"
done <"$tmp/ops"
"$CLIO" dd if="$u" of="$tmp/whole" bs=1M status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd of the whole image"; }
cmp "$tmp/ref" "$tmp/whole" || fail "the whole image read through clio differs"
echo "ok: read back through clio at the same offsets, and whole"

# ------------------------------------------------------------ clio info
rbd create --size 16M --object-size 1M rbd/small >/dev/null 2>&1 || fail "rbd create rbd/small"
for img in img small; do
	want=$(rbd info "rbd/$img" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["object_size"])')
	"$CLIO" info "$(ceph_uri $img)" --json >"$tmp/info.json" 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "clio info of rbd/$img"; }
	python3 - "$tmp/info.json" "$want" "$(image_size $img)" <<'PY' || fail "clio info --json of rbd/$img"
import json, sys
j = json.load(open(sys.argv[1]))
want, size = int(sys.argv[2]), int(sys.argv[3])
p = j["params"]
assert j["type"] == "rbd", j
assert j["size"] == size and p["image_size"] == size, (j, size)
assert p["object_size"] == want, (p, want)
assert j["maxio"] == want, (j, want)
assert j["engine"] == "librbd", j
assert p["rbd_cache"] == "false", p
assert j["queue_depth"] == 16 and p["qd"] == 16, j
print("ok: clio info: object_size", p["object_size"], "maxio", j["maxio"], "size", size)
PY
done
"$CLIO" info "$u" | grep -q "^  *object_size=4194304$\|object_size.*4194304" ||
	fail "clio info (text) lacks the object size"
"$CLIO" info "$u&qd=64" --json | grep -q '"queue_depth": 64' || fail "qd=64 is not the queue depth"

# ------------------------------------------------------------ clustering
# 4 KiB writes through clio arrive at the cluster as large writes
asok="$ceph_dir/run/osd.0.asok"
osd_w() {
	ceph --admin-daemon "$asok" perf dump | python3 -c '
import json, sys
o = json.load(sys.stdin)["osd"]
print(o["op_w"] + o["op_rw"], o["op_w_in_bytes"] + o["op_rw_in_bytes"])'
}
set -- $(osd_w)
w0=$1 b0=$2
"$CLIO" dd if="$tmp/pat" of="$u" bs=4k count=1024 conv=notrunc,fsync --json \
	>"$tmp/dd.json" 2>"$tmp/err" || { cat "$tmp/err"; fail "clio dd bs=4k --json"; }
set -- $(osd_w)
w1=$1 b1=$2
python3 - "$tmp/dd.json" <<'PY' || fail "the device statistics of 4 KiB writes"
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        j = json.loads(line)
d = [d for d in j["devices"] if d["role"] == "output"][0]
assert d["front_writes"] == 1024, d
kbt = d["write_bytes"] / d["writes"] / 1024
assert d["write_bytes"] == 4 << 20, d
assert kbt >= 256, ("KB/t of the writes", kbt, d)
print("ok: 1024 writes of 4 KiB went to librbd as %d writes of %.0f KB/t" % (d["writes"], kbt))
PY
ops=$((w1 - w0)) bytes=$((b1 - b0))
[ "$bytes" -ge 4194304 ] || fail "the OSD counted $bytes bytes written, not 4 MiB"
kbt=$((bytes / ops / 1024))
[ "$kbt" -ge 128 ] ||
	fail "the OSD saw $ops writes of $kbt KB on average for 1024 writes of 4 KiB"
echo "ok: the OSD counted $ops write operations, $bytes bytes ($kbt KB each on average)"
dd if="$tmp/pat" of="$tmp/ref" bs=4k count=1024 conv=notrunc status=none

# ------------------------------------------------------------ resize
"$CLIO" dd if="$tmp/pat" of="$u" bs=1M seek=40 count=2 status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd past the end of the image"; }
[ "$(image_size img)" = $((42 << 20)) ] ||
	fail "after seek=40 count=2 (bs=1M) the image is $(image_size img) bytes, not 42 MiB"
echo "ok: writing past the end grew the image to 42 MiB"
"$CLIO" dd if=/dev/null of="$u" bs=1000 seek=5000 status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd seek=5000 (bs=1000) to truncate"; }
[ "$(image_size img)" = 5000000 ] ||
	fail "after the truncate the image is $(image_size img) bytes, not 5000000"
rm -f "$tmp/export"
rbd export rbd/img "$tmp/export" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "rbd export rbd/img"; }
head -c 5000000 "$tmp/ref" | cmp - "$tmp/export" || fail "the data below the truncate changed"
"$CLIO" info "$u" --json | grep -q '"size": 5000000' || fail "clio info: not the new size"
echo "ok: ftruncate to 5000000 bytes (rbd_resize), the data below kept"
head -c 5000000 "$tmp/ref" >"$tmp/ref5"

# ------------------------------------------------------------ snapshot
rbd snap create rbd/img@s1 >/dev/null 2>&1 || fail "rbd snap create rbd/img@s1"
"$CLIO" dd if=/dev/zero of="$u" bs=64k count=4 conv=notrunc,fsync status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd over the image after the snapshot"; }
snap="rbd:rbd/img@s1?conf=$CEPH_CONF"
"$CLIO" dd if="$snap" of="$tmp/snapdata" bs=64k status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd out of the snapshot"; }
cmp "$tmp/ref5" "$tmp/snapdata" || fail "the snapshot does not read as the image at its time"
"$CLIO" info "$snap" --json >"$tmp/info.json" || fail "clio info of the snapshot"
grep -q '"resizable": false' "$tmp/info.json" && grep -q '"snap": "s1"' "$tmp/info.json" ||
	fail "clio info of the snapshot: $(cat "$tmp/info.json")"
if "$CLIO" dd if=/dev/zero of="$snap" bs=4k count=1 conv=notrunc 2>"$tmp/err"; then
	fail "a write into a snapshot succeeded"
fi
grep -qi "read-only" "$tmp/err" || fail "the write into the snapshot: '$(cat "$tmp/err")'"
echo "ok: the snapshot reads the data of its time, a write fails: $(head -n 1 "$tmp/err")"

# ------------------------------------------------------------ shrunk behind
# one process (tests/tools/clioctl) keeps rbd/shrunk open while `rbd
# resize` cuts it from 8 MiB to 1 MiB + 5000 bytes
clioctl="$(dirname "$CLIO")/tests/tools/clioctl"
[ -x "$clioctl" ] || fail "$clioctl not built (make tests)"
rbd create --size 8M rbd/shrunk >/dev/null 2>&1 || fail "rbd create rbd/shrunk"
mkfifo "$tmp/in" "$tmp/out"
"$clioctl" "$(ceph_uri shrunk)" "$tmp/model" <"$tmp/in" >"$tmp/out" 2>"$tmp/ctl.err" &
ctl_pid=$!
ceph_on_exit='kill "$ctl_pid" 2>/dev/null'
exec 3>"$tmp/in" 4<"$tmp/out"
ctl() { # CMD: clioctl's answer must be ok
	echo "$1" >&3
	read -r ans <&4 || { cat "$tmp/ctl.err" >&2; fail "clioctl: no answer to '$1'"; }
	case $ans in ok*) ;; *) fail "rbd/shrunk: $1: $ans";; esac
}
ctl "write 0 8388608 1"
ctl fsync
cut=$((1048576 + 5000))
rbd resize --size "${cut}B" --allow-shrink rbd/shrunk >/dev/null 2>&1 || fail "rbd resize rbd/shrunk"
truncate -s "$cut" "$tmp/model"
# a cluster of two 16 KiB blocks across the new end, one block past it in
# the next object
ctl "write 1044480 16384 2"
ctl "write 5242880 4096 3"
ctl fsync
ctl "devread 1044480 16384"
ctl "devread 5242880 4096"
# and straight onto the device, past the end in the object after
ctl "devwrite 6291456 4096 4"
ctl fsync
ctl "devread 6291456 4096"
ctl "devread 7340032 4096"
ctl quit
exec 3>&- 4<&-
wait "$ctl_pid" || fail "clioctl on rbd/shrunk exited with an error"
ceph_on_exit=""
[ "$(image_size shrunk)" -ge 6295552 ] ||
	fail "rbd/shrunk is $(image_size shrunk) bytes after writes up to 6295552"
rm -f "$tmp/export"
rbd export rbd/shrunk "$tmp/export" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "rbd export rbd/shrunk"; }
for r in "1044480 16384" "5242880 4096" "6291456 4096"; do
	set -- $r
	cmp -i "$1:$1" -n "$2" "$tmp/model" "$tmp/export" ||
		fail "rbd/shrunk: the $2 bytes written at $1 are not in rbd export"
done
echo "ok: writes across and past the end of an image shrunk behind clio grew it and are in rbd export"

# ------------------------------------------------------------ errors
check_err() { # DEVICE WORD: clio info fails with one line naming WORD
	if "$CLIO" info "$1" >/dev/null 2>"$tmp/err"; then
		fail "clio info '$1' succeeded"
	fi
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "not one line for '$1': $(cat "$tmp/err")"
	grep -q -- "$2" "$tmp/err" || fail "the error for '$1' does not name '$2': $(cat "$tmp/err")"
	echo "ok: $(cat "$tmp/err")"
}
check_err "rbd:rbd/nosuch?conf=$CEPH_CONF" "image 'nosuch'"
check_err "rbd:nopool/img?conf=$CEPH_CONF" "pool 'nopool'"
check_err "rbd:rbd/img@nosnap?conf=$CEPH_CONF" "snapshot 'nosnap'"
check_err "rbd:rbd" "rbd:POOL/IMAGE"
check_err "rbd:/img" "rbd:POOL/IMAGE"
check_err "rbd:rbd/img?conf=$CEPH_CONF&qd=0" "bad qd '0'"
check_err "rbd:rbd/img?conf=$CEPH_CONF&colour=red" "unknown key 'colour'"
check_err "rbd:rbd/img?conf=$tmp/none.conf" "$tmp/none.conf"
