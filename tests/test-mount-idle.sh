#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-idle.sh - the devices clio mount keeps for the next open of
# a closed file (idle devices, -o idle_devices=N):
#   at most N stay idle (devices_idle in .clio-stats), the oldest closed;
#   unlinking a file's last name closes its idle device;
#   idle_devices=0 keeps none: each last close closes the device;
#   four programs at once open, read, append to and close 15 files
#   through a mount that keeps 3 idle devices, while 7 of the source's
#   files are appended to behind the mount's back, and every file reads
#   through the mount exactly as the source holds it (kernel_cache=off);
#   a bad value is refused with one line and exit status 64.
set -e
. "$(dirname "$0")/mount-common.sh"
src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt"
val() { "$CLIO" stat --raw "$mnt" | sed -n "s/^$1: //p"; }

i=0
while [ $i -lt 16 ]; do
	head -c $((3000 + i * 1000)) /dev/urandom | base64 >"$src/f$i"
	i=$((i + 1))
done

mount_start "$src" "$mnt" -o idle_devices=4,kernel_cache=off
i=0
while [ $i -lt 16 ]; do
	cat "$mnt/f$i" >/dev/null
	i=$((i + 1))
done
idle=$(val devices_idle)
[ "$idle" -eq 4 ] || fail "16 files read and closed: $idle idle devices, want 4"
closed0=$(val devices_closed)
[ "$closed0" -ge 12 ] || fail "only $closed0 devices closed beyond the 4 idle"
# f15 was read last: idle now
rm "$mnt/f15"
idle=$(val devices_idle)
[ "$idle" -eq 3 ] || fail "unlink of an idle file: $idle idle devices, want 3"
echo "ok: 4 idle at most, unlink closes one" >&2
mount_stop "$mnt"

mount_start "$src" "$mnt" -o idle_devices=0
cat "$mnt/f1" "$mnt/f2" >/dev/null
idle=$(val devices_idle)
closed=$(val devices_closed)
[ "$idle" -eq 0 ] && [ "$closed" -ge 2 ] ||
	fail "idle_devices=0: $idle idle, $closed closed, want 0 and 2"
mount_stop "$mnt"

# programs at once, and a source that changes meanwhile
mount_start "$src" "$mnt" -o idle_devices=3,kernel_cache=off
worker() {
	n=0
	while [ $n -lt 60 ]; do
		# appends to f0 to f7 (only through the mount, so that no
		# append races one from outside), reads of all
		k=$(( (n * 7 + $1 * 5) % 8 ))
		cat "$mnt/f$k" "$mnt/f$((8 + (n + $1) % 7))" >/dev/null || exit 1
		echo "w$1 n$n" >>"$mnt/f$k" || exit 1
		n=$((n + 1))
	done
}
outside() {
	n=0
	while [ $n -lt 60 ]; do
		echo "outside $n" >>"$src/f$((8 + n % 7))"
		n=$((n + 1))
	done
}
worker 1 & p1=$!
worker 2 & p2=$!
worker 3 & p3=$!
worker 4 & p4=$!
outside & p5=$!
for p in $p1 $p2 $p3 $p4 $p5; do
	wait $p || fail "a program on the mount failed"
done
i=0
while [ $i -lt 15 ]; do
	cmp "$src/f$i" "$mnt/f$i" || fail "f$i reads otherwise through the mount"
	i=$((i + 1))
done
lines=$(cat "$src"/f* | grep -a -c '^w[1-4] n[0-9]*$' || true)
[ "$lines" -ge 240 ] || fail "$lines of the 240 lines appended through the mount are in the source"
idle=$(val devices_idle)
[ "$idle" -le 3 ] || fail "$idle idle devices, want at most 3"
mount_stop "$mnt"
echo "ok: four programs and a changing source" >&2

set +e
"$CLIO" mount -o idle_devices=70000 "$src" "$mnt" 2>"$tmp/bad"
rc=$?
set -e
[ $rc -eq 64 ] || fail "idle_devices=70000: exit $rc, want 64"
[ "$(wc -l <"$tmp/bad")" -eq 1 ] && grep -q "idle_devices '70000'" "$tmp/bad" ||
	fail "idle_devices=70000 said: $(cat "$tmp/bad")"
exit 0
