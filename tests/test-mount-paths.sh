#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-paths.sh - clio mount and clio umount with the paths users
# type: a relative image path and a relative mount point, as a daemon
# (no -f): the mount serves the image, and the daemon's own unmount at
# SIGTERM leaves no mount behind; a second mount on the same directory is
# refused (exit 73, one line naming it) and stacks nothing; clio umount
# of a directory that is no clio mount exits 64, of a missing one 66,
# each with one line naming it, and removes a dead mount; another user's
# clio umount of root's mount exits 77 at once (not after 3 s as busy)
# with one line, and the mount stays; --help of mount and umount exits 0.
set -e
. "$(dirname "$0")/mount-common.sh"

# daemon_pid MNT: the session leader among the clio processes serving MNT
daemon_pid() {
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		tr '\0' ' ' 2>/dev/null <"$d/cmdline" | grep -qF "$CLIO mount " || continue
		tr '\0' ' ' 2>/dev/null <"$d/cmdline" | grep -qF " $1 " || continue
		[ "$(awk '{ print $6 }' "$d/stat" 2>/dev/null)" = "$p" ] && echo "$p" && return 0
	done
	return 1
}
# mounts_on DIR: how many mounts are on DIR
mounts_on() { awk -v d="$1" '$5 == d { n++ } END { print n + 0 }' /proc/self/mountinfo; }
# gone PID: wait up to 10 s for PID to end
gone() {
	i=0
	while kill -0 "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "daemon $1 did not end"
		sleep 0.1
	done
}
# one_line CODE WANT NAME FILE: exit CODE is WANT and FILE is one line naming NAME
one_line() {
	[ "$1" -eq "$2" ] || fail "exit $1, want $2: $(cat "$4")"
	[ "$(wc -l <"$4")" -eq 1 ] || fail "not one line: $(cat "$4")"
	grep -qF "$3" "$4" || fail "the error does not name $3: $(cat "$4")"
}

cd "$tmp"
mkdir mnt src
head -c 1M /dev/urandom >img.bin
echo data >src/f

# ----------------------------------- a relative image and mount point
"$CLIO" mount img.bin mnt 2>err || fail "clio mount img.bin mnt: $(cat err)"
mounted="$mounted $tmp/mnt"
mount_pid=$(daemon_pid mnt) || fail "no daemon for mnt"
cmp img.bin mnt/disk || fail "relative image: the mount does not serve it"
echo "ok: a relative image path"

# ----------------------------------------------- twice on one directory
rc=0
"$CLIO" mount src mnt 2>err || rc=$?
one_line $rc 73 "$tmp/mnt" err
rc=0
"$CLIO" mount -f src "$tmp/mnt" 2>err || rc=$?
one_line $rc 73 "$tmp/mnt" err
[ "$(mounts_on "$tmp/mnt")" -eq 1 ] || fail "$(mounts_on "$tmp/mnt") mounts on mnt"
cmp img.bin mnt/disk || fail "the first mount was hidden"
echo "ok: a second mount is refused"

# --------------------------------- SIGTERM: the daemon's own unmount
kill -TERM "$mount_pid"
gone "$mount_pid"
mount_pid=
[ "$(mounts_on "$tmp/mnt")" -eq 0 ] || fail "a relative mount point stays mounted after SIGTERM"
"$CLIO" mount src mnt 2>err || fail "clio mount src mnt: $(cat err)"
mount_pid=$(daemon_pid mnt) || fail "no daemon for mnt"
[ "$(cat mnt/f)" = data ] || fail "relative directory mount"
kill -TERM "$mount_pid"
gone "$mount_pid"
mount_pid=
[ "$(mounts_on "$tmp/mnt")" -eq 0 ] || fail "a directory on a relative mount point stays mounted"
echo "ok: a relative mount point is unmounted at SIGTERM"

# ------------------------------------------------------------ umount
rc=0
"$CLIO" umount src 2>err || rc=$?
one_line $rc 64 src err
rc=0
"$CLIO" umount nothere 2>err || rc=$?
one_line $rc 66 nothere err
# another user may not unmount root's mount: 77 at once, one line
"$CLIO" mount src mnt 2>err || fail "clio mount src mnt: $(cat err)"
mount_pid=$(daemon_pid mnt) || fail "no daemon for mnt"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	chmod 755 "$tmp"
	rc=0
	start=$(date +%s)
	setpriv --reuid=65534 --regid=65534 --clear-groups "$CLIO" umount mnt 2>err || rc=$?
	one_line $rc 77 "another user" err
	[ $(( $(date +%s) - start )) -lt 2 ] || fail "another user's clio umount waited"
	[ "$(mounts_on "$tmp/mnt")" -eq 1 ] || fail "another user unmounted root's mount"
	[ "$(cat mnt/f)" = data ] || fail "the mount does not serve after another user's umount"
	echo "ok: another user's clio umount: 77, one line"
fi
"$CLIO" umount mnt 2>err || fail "clio umount mnt: $(cat err)"
gone "$mount_pid"
mount_pid=
# a dead mount (the daemon killed) is removed
"$CLIO" mount src mnt 2>err || fail "clio mount src mnt: $(cat err)"
mount_pid=$(daemon_pid mnt) || fail "no daemon for mnt"
kill -KILL "$mount_pid"
gone "$mount_pid"
mount_pid=
"$CLIO" umount mnt 2>err || fail "clio umount of a dead mount: $(cat err)"
[ "$(mounts_on "$tmp/mnt")" -eq 0 ] || fail "the dead mount stays"
echo "ok: clio umount"

for c in mount umount; do
	"$CLIO" $c --help >out 2>err || fail "clio $c --help exits $?"
	grep -q "usage: clio $c" out || fail "clio $c --help: $(cat out)"
done
cd /
exit 0
