#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-rdtrunc-nfs.sh - test-mount-rdtrunc.sh's case for a mount of
# an NFS export (NFS-Ganesha in the test's namespace): open(2) with
# O_RDONLY|O_TRUNC truncates, seen through the mount and on the export after
# the close; the handle counts as a writer only while it is open: what
# another writer puts on the server afterwards is seen at the next open
# (close-to-open) and stays there after unmounting.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"
. "$(dirname "$0")/nfs-mount-common.sh"
command -v perl >/dev/null 2>&1 || { echo "skip: perl is missing" >&2; exit 77; }

ganesha_start
url="nfs://127.0.0.1$export?port=$nfs_port&mountport=$mnt_port"
mnt=$tmp/m
nfs_mount "$mnt" "$url"
echo hello >"$mnt/f"
cat "$mnt/f" >/dev/null
got=$(perl -e 'use Fcntl; sysopen(F, $ARGV[0], O_RDONLY | O_TRUNC) or die "$ARGV[0]: $!";
	$n = sysread(F, $b, 100); print((stat(F))[7], " $n\n"); close(F)' "$mnt/f")
[ "$got" = "0 0" ] || fail "O_RDONLY|O_TRUNC gives '$got', want '0 0'"
[ "$(stat -c %s "$export/f")" = 0 ] || fail "the export holds $(stat -c %s "$export/f") bytes after the close"
sleep 1.1
[ -z "$(cat "$mnt/f")" ] || fail "the old data is back: $(cat "$mnt/f")"
echo "another writer" >"$export/f"
got=$(cat "$mnt/f")
[ "$got" = "another writer" ] ||
	fail "after O_RDONLY|O_TRUNC, the server's new contents read as '$got'"
nfs_umount "$mnt"
[ "$(cat "$export/f")" = "another writer" ] ||
	fail "the export holds '$(cat "$export/f")' after unmounting"
echo "ok: nfs: O_RDONLY|O_TRUNC truncates, a later change on the server is seen"
