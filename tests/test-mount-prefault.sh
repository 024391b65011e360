#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-prefault.sh - clio mount's prefault under a memory limit: a
# daemon in a memory cgroup of 96 MiB asked for a 256 MiB cache does not
# make it resident (the OOM killer would choose among the cgroup's
# processes): one line says the cache is left to its first use, the
# daemon stays far below the cache size, and the mount serves data that
# reads back equal.  Needs root and a writable cgroup memory controller
# (v1, or v2 with memory delegated); skips otherwise.
set -e
. "$(dirname "$0")/mount-common.sh"
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (a memory cgroup)"; exit 77; }

cg=""
v1=$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' /proc/self/cgroup)
if [ -n "$v1" ] && [ -w "/sys/fs/cgroup/memory$v1" ]; then
	cg="/sys/fs/cgroup/memory${v1%/}/clio-prefault-$$"
	mkdir "$cg" && echo $((96 << 20)) >"$cg/memory.limit_in_bytes" || cg=""
else
	v2=$(sed -n 's/^0::\(.*\)$/\1/p' /proc/self/cgroup)
	base="/sys/fs/cgroup${v2%/}"
	if grep -qw memory "$base/cgroup.subtree_control" 2>/dev/null; then
		cg="$base/clio-prefault-$$"
		mkdir "$cg" && echo $((96 << 20)) >"$cg/memory.max" || cg=""
	fi
fi
[ -n "$cg" ] || { echo "skip: no writable memory cgroup here"; exit 77; }
# the cgroup goes once its last process (the daemon's helpers too) left
drop_cgroup() {
	i=0
	while ! rmdir "$cg" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
}
trap 'cleanup; drop_cgroup' EXIT

# the daemon (clio mount -f, the background job itself: exec) moves
# itself into the cgroup first
in_cgroup() {
	exec sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}
run_as=in_cgroup
mnt=$tmp/mnt
mkdir "$mnt"
mount_start mem:size=16M "$mnt" -o cache_size=256M
ls "$mnt" >/dev/null
rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$mount_pid/status")
grep -qx "$mount_pid" "$cg/cgroup.procs" || fail "the daemon is not in the cgroup"
[ -n "$rss" ] && [ "$rss" -lt $((80 * 1024)) ] ||
	fail "a 256 MiB cache under a 96 MiB limit: ${rss:-?} kB resident"
[ "$(grep -c 'prefault' "$tmp/mount.err")" -eq 1 ] &&
	grep -q "left to their first use: more than the memory available" "$tmp/mount.err" ||
	fail "no one-line prefault warning: $(cat "$tmp/mount.err")"
head -c 8388608 /dev/urandom >"$tmp/pat"
dd if="$tmp/pat" of="$mnt/disk" bs=1M conv=notrunc,fsync status=none
cmp -n 8388608 "$tmp/pat" "$mnt/disk" || fail "the data read back differs"
mount_stop "$mnt" 2>/dev/null
echo "ok: a 256 MiB cache under a 96 MiB cgroup: not made resident (${rss} kB), one line says so, 8 MiB read back equal"
