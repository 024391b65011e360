#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-statsperm.sh - the control file .clio-stats names the files
# that are open through the mount, so it is the mount's owner's alone:
# through a pass-through mount started by root with allow_other, while a
# user made for the test (removed again with its group) holds open a
# file in a 0700 directory of root's, the user gets EACCES opening
# .clio-stats (cat, and `clio stat`), as on a local file of mode 0400
# owned by root, and the snapshot, which root reads (and `clio stat`
# prints), holds the file's name; the file is 0400 and root's.  Through
# a mount the user started itself, the user (its owner) reads it and
# `clio stat` works, and the file is 0400 and the user's.
set -e
. "$(dirname "$0")/mount-common.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "skip: making a test user needs root" >&2
	exit 77
fi
for t in useradd userdel groupdel setpriv; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "skip: $t is missing" >&2
		exit 77
	fi
done

user=cliost$$
made_user=
trap 'cleanup; [ -n "$made_user" ] && userdel "$user" 2>/dev/null; getent group "$user" >/dev/null && [ -n "$made_user" ] && groupdel "$user" 2>/dev/null; true' EXIT
getent passwd "$user" >/dev/null && fail "user $user exists already"
getent group "$user" >/dev/null && fail "group $user exists already"
useradd -M -U -s /bin/sh -d /nonexistent "$user" && made_user=1
chmod 755 "$tmp"
mkdir "$tmp/bin"
cp "$CLIO" "$tmp/bin/clio"
chmod 755 "$tmp/bin/clio"
CLIO=$tmp/bin/clio
as_user="setpriv --reuid=$user --regid=$user --init-groups --"
as_user() { $as_user "$@"; }


src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt" "$src/secret"
chmod 755 "$src" "$mnt"
echo data >"$src/secret/hidden-name"
chmod 700 "$src/secret"
# the local reference: a 0400 file of root's
echo x >"$tmp/ref"
chmod 400 "$tmp/ref"
want=$(as_user perl -e 'open(F, "<", $ARGV[0]) and exit 0; print $!+0' "$tmp/ref") || true
[ "$want" = 13 ] || fail "local reference: the user opens a 0400 file of root's: errno '$want'"

mount_start "$src" "$mnt" -o allow_other
[ "$(stat -c '%a %u' "$mnt/.clio-stats")" = "400 0" ] ||
	fail "root's mount: .clio-stats is $(stat -c '%a %u' "$mnt/.clio-stats"), want 400 0"
# root keeps the file open while the user tries
sleep 30 <"$mnt/secret/hidden-name" &
holder=$!
sleep 0.2
got=$(as_user perl -e 'open(F, "<", $ARGV[0]) and exit 0; print $!+0' "$mnt/.clio-stats") || true
[ "$got" = 13 ] || fail "another user opens root's .clio-stats: errno '$got', want 13 (EACCES)"
as_user cat "$mnt/.clio-stats" >"$tmp/user.out" 2>/dev/null &&
	fail "another user reads root's .clio-stats"
[ -s "$tmp/user.out" ] && fail "another user got bytes of .clio-stats"
rc=0
as_user "$CLIO" stat "$mnt" >"$tmp/user.out" 2>"$tmp/user.err" || rc=$?
[ "$rc" -ne 0 ] || fail "another user's clio stat of root's mount exited 0"
grep -q hidden-name "$tmp/user.out" "$tmp/user.err" && fail "another user's clio stat names the open file"
cat "$mnt/.clio-stats" >"$tmp/root.out" || fail "root cannot read its .clio-stats"
grep -q '^secret/hidden-name path: secret/hidden-name$' "$tmp/root.out" ||
	fail "root's snapshot lacks the open file: $(grep path: "$tmp/root.out")"
"$CLIO" stat "$mnt" >"$tmp/stat.out" || fail "root's clio stat of its mount"
[ -s "$tmp/stat.out" ] || fail "root's clio stat printed nothing"
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
mount_stop "$mnt"
echo "ok: root's mount: another user gets EACCES, root reads .clio-stats"

# ----------------------------- a mount started by the user itself
if ! as_user test -r /dev/fuse -a -w /dev/fuse; then
	echo "note: /dev/fuse is not open to other users here: no mount by the user" >&2
	exit 0
fi
src2=$tmp/src2 mnt2=$tmp/mnt2
mkdir "$src2" "$mnt2"
echo mine >"$src2/f"
chown -R "$user:$user" "$src2" "$mnt2"
run_as=$as_user
mount_start "$src2" "$mnt2"
run_as=
uid=$(id -u "$user")
[ "$(as_user stat -c '%a %u' "$mnt2/.clio-stats")" = "400 $uid" ] ||
	fail "the user's mount: .clio-stats is $(as_user stat -c '%a %u' "$mnt2/.clio-stats"), want 400 $uid"
as_user cat "$mnt2/.clio-stats" >"$tmp/own.out" || fail "the owner cannot read its .clio-stats"
grep -q '^mountpoint: ' "$tmp/own.out" || fail "the owner's snapshot: $(head -n 2 "$tmp/own.out")"
as_user "$CLIO" stat "$mnt2" >"$tmp/own.stat" || fail "the owner's clio stat"
[ -s "$tmp/own.stat" ] || fail "the owner's clio stat printed nothing"
mount_stop "$mnt2"
echo "ok: the user's own mount: the owner reads .clio-stats and clio stat works"
