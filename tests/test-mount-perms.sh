#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-perms.sh - clio mount of a directory as seen by other users:
# a user made for the test (and removed again, with its groups; nothing
# the system had is touched), with a supplementary group that owns a
# 2775 directory, creates files, directories, fifos, a setuid file
# (create 04777) and a sticky directory (mkdir 01777) under umask 000,
# 002, 022 and 077, through a mount started by root with allow_other
# and through a mount the user started itself; every mode, owner and
# group must be what the same operations give in a plain local
# directory (stat -c '%a %U %G').  Then allow_other itself: the user
# reads and writes through root's mount with it, and is refused without.
set -e
. "$(dirname "$0")/mount-common.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "skip: making a test user needs root" >&2
	exit 77
fi
for t in useradd userdel groupadd groupdel setpriv perl; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "skip: $t is missing" >&2
		exit 77
	fi
done

user=cliou$$ grp=cliog$$
made_user= made_grp=
drop_ids() {
	[ -n "$made_user" ] && userdel "$user" 2>/dev/null
	[ -n "$made_grp" ] && groupdel "$grp" 2>/dev/null
	return 0
}
trap 'cleanup; drop_ids' EXIT
getent group "$grp" >/dev/null && fail "group $grp exists already"
getent passwd "$user" >/dev/null && fail "user $user exists already"
groupadd "$grp" && made_grp=1
useradd -M -U -G "$grp" -s /bin/sh -d /nonexistent "$user" && made_user=1
# the user must reach the test's files and run the command
chmod 755 "$tmp"
mkdir "$tmp/bin"
cp "$CLIO" "$tmp/bin/clio"
chmod 755 "$tmp/bin/clio"
CLIO=$tmp/bin/clio

# as_user CMD...: CMD as the test user with its supplementary groups
as_user="setpriv --reuid=$user --regid=$user --init-groups --"
as_user() { $as_user "$@"; }

# prepare DIR: a fresh u$U tree for each umask, owned by the user, with
# g/ owned by root and the supplementary group, mode 2775
prepare() {
	for u in 000 002 022 077; do
		mkdir -p "$1/u$u/g"
		chown "$user:$user" "$1/u$u"
		chown "root:$grp" "$1/u$u/g"
		chmod 2775 "$1/u$u/g"
	done
}

# make_all BASE: the operations, as the user, under each umask
make_all() {
	for u in 000 002 022 077; do
		as_user sh -c '
		umask $1; cd "$2" || exit 1
		touch f && mkdir d && mkfifo p &&
		perl -e "use Fcntl; sysopen(F, q(s), O_CREAT|O_WRONLY, 04777) or die q(s: ).\$!;
			mkdir(q(t), 01777) or die q(t: ).\$!" &&
		touch g/f && mkdir g/d && mkfifo g/p &&
		perl -e "use Fcntl; sysopen(F, q(g/s), O_CREAT|O_WRONLY, 02777) or die q(g/s: ).\$!"
		' sh "$u" "$2/u$u" 2>>"$tmp/ops.err" || {
			cat "$tmp/ops.err" >&2
			fail "$1: the operations under umask $u failed in $2"
		}
	done
}

# make_root BASE: root (uid 0) with the user's group as its gid and no
# supplementary groups, under umask 022: a file, a directory and a
# setgid file in u022 (owned by the user), and the same in its setgid g/
make_root() {
	setpriv --regid="$user" --clear-groups -- sh -c '
	umask 022; cd "$1" || exit 1
	touch rf && mkdir rd && touch g/rf && mkdir g/rd &&
	perl -e "use Fcntl; sysopen(F, q(rs), O_CREAT|O_WRONLY, 02777) or die q(rs: ).\$!;
		sysopen(F, q(g/rs), O_CREAT|O_WRONLY, 02777) or die q(g/rs: ).\$!"
	' sh "$2/u022" 2>>"$tmp/ops.err" || {
		cat "$tmp/ops.err" >&2
		fail "$1: root's operations failed in $2"
	}
	(cd "$2/u022" && for n in rf rd rs g/rf g/rd g/rs; do
		stat -c "root:u022/$n %a %U %G" "$n"
	done)
}

# listing BASE: mode, owner, group of everything made, one line each
listing() {
	(cd "$1" && for u in 000 002 022 077; do
		for n in f d p s t g g/f g/d g/p g/s; do
			stat -c "u$u/$n %a %U %G" "u$u/$n"
		done
	done)
}

# same LABEL: the mount's listing is the local directory's
same() {
	if ! diff "$tmp/local.list" "$tmp/$1.list" >"$tmp/diff"; then
		cat "$tmp/diff" >&2
		fail "$1: modes, owners or groups differ from a local directory"
	fi
	echo "ok: $1: $(wc -l <"$tmp/local.list") objects as on a local directory"
}

local=$tmp/local src=$tmp/src mnt=$tmp/mnt
mkdir "$local" "$src" "$mnt"
chmod 755 "$local" "$src" "$mnt"
prepare "$local"
make_all local "$local"
listing "$local" >"$tmp/local.list"
make_root local "$local" >"$tmp/local-root.list"
grep -q '^u000/f 666 ' "$tmp/local.list" || fail "local reference: $(head -n 1 "$tmp/local.list")"

# -------------------------------- a mount started by root, allow_other
prepare "$src"
mount_start "$src" "$mnt" -o allow_other
make_all root-mount "$mnt"
listing "$mnt" >"$tmp/root-mount.list"
make_root root-mount "$mnt" >"$tmp/root-mount-root.list"
listing "$src" >"$tmp/root-source.list"
(cd "$src/u022" && for n in rf rd rs g/rf g/rd g/rs; do
	stat -c "root:u022/$n %a %U %G" "$n"
done) >"$tmp/root-source-root.list"
mount_stop "$mnt"
same root-mount
same root-source
for l in root-mount-root root-source-root; do
	diff "$tmp/local-root.list" "$tmp/$l.list" >&2 ||
		fail "$l: what root made differs from a local directory"
done
echo "ok: root with another gid: $(wc -l <"$tmp/local-root.list") objects as on a local directory"

# ----------------------------- allow_other: the user reads and writes
mount_start "$src" "$mnt" -o allow_other
as_user sh -c 'echo mine >"$1/u022/w"' sh "$mnt" || fail "allow_other: the user cannot write"
[ "$(cat "$mnt/u022/w")" = mine ] || fail "allow_other: root reads another's file wrong"
echo root >"$mnt/shared"
chmod 666 "$mnt/shared"
as_user sh -c 'echo user >>"$1/shared"' sh "$mnt" || fail "allow_other: the user cannot append"
[ "$(as_user cat "$mnt/shared" | tr '\n' ' ')" = "root user " ] ||
	fail "allow_other: the user reads $(as_user cat "$mnt/shared")"
[ "$(stat -c '%U %G' "$src/u022/w")" = "$user $user" ] ||
	fail "allow_other: the user's file is owned by $(stat -c '%U %G' "$src/u022/w")"
mount_stop "$mnt"
mount_start "$src" "$mnt"
as_user cat "$mnt/shared" >/dev/null 2>&1 && fail "without allow_other the user gets in"
mount_stop "$mnt"
echo "ok: allow_other"

# --------------------------------- a mount started by the user itself
src2=$tmp/src2 mnt2=$tmp/mnt2
if ! as_user test -r /dev/fuse -a -w /dev/fuse; then
	echo "note: /dev/fuse is not open to other users here: no mount by the user" >&2
	exit 0
fi
mkdir "$src2" "$mnt2"
chown "$user:$user" "$src2" "$mnt2"
prepare "$src2"
run_as=$as_user
mount_start "$src2" "$mnt2"
make_all user-mount "$mnt2"
listing "$mnt2" >"$tmp/user-mount.list"
run_as=
mount_stop "$mnt2"
same user-mount
if grep -qs '^[[:space:]]*user_allow_other' /etc/fuse.conf; then
	run_as=$as_user
	mount_start "$src2" "$mnt2" -o allow_other
	run_as=
	[ "$(cat "$mnt2/u022/f" | wc -c)" -eq 0 ] || fail "root reads the user's mount"
	mount_stop "$mnt2"
	echo "ok: allow_other on the user's mount"
else
	echo "note: /etc/fuse.conf has no user_allow_other: the user's mount is not shared" >&2
fi
exit 0
