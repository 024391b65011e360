#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-acl.sh - clio mount of a directory whose objects carry POSIX
# ACLs (system.posix_acl_access and _default, set with setfattr), as seen
# by a user made for the test (removed again with its group):
#   a file whose ACL denies the user what its mode bits would give
#   (user:U:---), a directory whose ACL denies the user search
#   (user:U:r--), one whose ACL denies it listing (user:U:--x), one
#   whose ACL denies it changes (user:U:r-x: rm, rmdir, mv and ln into
#   it) and a file whose ACL denies it writing (truncate, append): the
#   user is refused through the mount exactly as in a local directory,
#   also after root read the file through the mount (its data in the
#   caches), and after an `ls -l` of the directory (readdirplus): its
#   data at once, a stat beneath once the kernel's entries (1 s) expired;
#   a file reached by a hard link in a directory open to the user, while
#   its other name is in one the user cannot search: readable, as locally;
#   with -o xattr, also what the ACL grants beyond the mode bits
#   (user:U:r-- on a file of mode 0600), and a directory's default ACL
#   decides the mode of what the user creates in it under umask 077,
#   not the umask (as in a local directory).
set -e
. "$(dirname "$0")/mount-common.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "skip: making a test user needs root" >&2
	exit 77
fi
for t in useradd userdel groupdel setpriv setfattr; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "skip: $t is missing" >&2
		exit 77
	fi
done

user=clioa$$
made_user=
trap 'cleanup; [ -n "$made_user" ] && userdel "$user" 2>/dev/null; getent group "$user" >/dev/null && [ -n "$made_user" ] && groupdel "$user" 2>/dev/null; true' EXIT
getent passwd "$user" >/dev/null && fail "user $user exists already"
getent group "$user" >/dev/null && fail "group $user exists already"
useradd -M -U -s /bin/sh -d /nonexistent "$user" && made_user=1
uid=$(id -u "$user")
chmod 755 "$tmp"
as_user() { setpriv --reuid="$user" --regid="$user" --init-groups -- "$@"; }

# the xattr value of an ACL: entries TAG:PERM[:ID], sorted by tag and id
le16() { printf '%02x%02x' $(($1 & 255)) $(($1 >> 8 & 255)); }
le32() { printf '%02x%02x%02x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) \
	$(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
acl() {
	printf '0x02000000'
	for e in "$@"; do
		tag=${e%%:*} rest=${e#*:}
		perm=${rest%%:*} id=4294967295
		[ "$rest" = "$perm" ] || id=${rest#*:}
		case $tag in
		u) t=1 ;; U) t=2 ;; g) t=4 ;; m) t=16 ;; o) t=32 ;;
		esac
		le16 $t; le16 $perm; le32 $id
	done
}

# prepare DIR: the same objects and ACLs in each tree
prepare() {
	mkdir "$1/nox" "$1/nor" "$1/dacl" "$1/hid" "$1/pub" "$1/nodel" "$1/nodel/sub"
	echo victim >"$1/nodel/victim"
	echo mine >"$1/pub/mine"
	echo keep >"$1/wdeny"
	chmod 666 "$1/nodel/victim" "$1/pub/mine" "$1/wdeny"
	chmod 777 "$1/nodel" "$1/pub"
	setfattr -n system.posix_acl_access -v "$(acl u:7 U:5:$uid g:7 m:7 o:7)" "$1/nodel"
	setfattr -n system.posix_acl_access -v "$(acl u:6 U:4:$uid g:6 m:6 o:6)" "$1/wdeny"
	echo linked >"$1/hid/hl"
	chmod 644 "$1/hid/hl"
	ln "$1/hid/hl" "$1/pub/hl"
	chmod 700 "$1/hid"
	echo secret >"$1/deny"
	echo granted >"$1/grant"
	echo inside >"$1/nox/f"
	echo listed >"$1/nor/f"
	chmod 644 "$1/deny"
	chmod 600 "$1/grant"
	chmod 755 "$1/nox" "$1/nor"
	chmod 777 "$1/dacl"
	setfattr -n system.posix_acl_access -v "$(acl u:6 U:0:$uid g:4 m:4 o:4)" "$1/deny"
	setfattr -n system.posix_acl_access -v "$(acl u:6 U:4:$uid g:0 m:4 o:0)" "$1/grant"
	setfattr -n system.posix_acl_access -v "$(acl u:7 U:4:$uid g:5 m:5 o:5)" "$1/nox"
	setfattr -n system.posix_acl_access -v "$(acl u:7 U:1:$uid g:5 m:5 o:5)" "$1/nor"
	setfattr -n system.posix_acl_default -v "$(acl u:7 g:7 o:7)" "$1/dacl"
}

# try DIR CHECKS...: "name ok|refused" for each check as the user
try() {
	d=$1
	shift
	for c in "$@"; do
		case $c in
		deny) as_user cat "$d/deny" ;;
		grant) as_user cat "$d/grant" ;;
		nox) as_user cat "$d/nox/f" ;;
		noxstat) as_user stat -c %s "$d/nox/f" ;;
		nor) as_user ls "$d/nor" ;;
		link) as_user cat "$d/pub/hl" ;;
		rm) as_user rm "$d/nodel/victim" ;;
		rmdir) as_user rmdir "$d/nodel/sub" ;;
		mvin) as_user mv "$d/pub/mine" "$d/nodel/mine" ;;
		lnin) as_user ln "$d/pub/mine" "$d/nodel/mine2" ;;
		trunc) as_user truncate -s 0 "$d/wdeny" ;;
		append) as_user sh -c 'echo more >>"$1/wdeny"' sh "$d" ;;
		dacl) as_user sh -c 'umask 077; : >"$1/dacl/f$2"; mkdir "$1/dacl/d$2";
			stat -c "%a" "$1/dacl/f$2" "$1/dacl/d$2" | tr "\n" " "' sh "$d" "$n" ;;
		esac >"$tmp/out" 2>&1 && echo "$c ok $(cat "$tmp/out")" || echo "$c refused"
	done
}

local=$tmp/local src=$tmp/src mnt=$tmp/mnt
mkdir "$local" "$src" "$mnt"
: >"$tmp/probe"
if ! setfattr -n system.posix_acl_access -v "$(acl u:6 g:4 o:4)" "$tmp/probe" 2>/dev/null; then
	echo "skip: the test's directory takes no ACLs" >&2
	exit 77
fi
chmod 755 "$local" "$src" "$mnt"
prepare "$local"
prepare "$src"
denials="deny nox noxstat nor rm rmdir mvin lnin trunc append"

n=1
try "$local" $denials grant dacl link >"$tmp/local.res"
grep -q '^deny refused' "$tmp/local.res" && grep -q '^grant ok granted' "$tmp/local.res" &&
	grep -q '^dacl ok 666 777' "$tmp/local.res" && grep -q '^link ok linked' "$tmp/local.res" ||
	fail "local reference: $(cat "$tmp/local.res")"

# check LABEL CHECKS...: the user gets what it gets locally
check() {
	label=$1
	shift
	try "$local" "$@" >"$tmp/want"
	try "$mnt" "$@" >"$tmp/got"
	if ! diff "$tmp/want" "$tmp/got" >"$tmp/diff"; then
		cat "$tmp/diff" >&2
		fail "$label: the user gets other rights than in a local directory"
	fi
	echo "ok: $label: $(tr '\n' ';' <"$tmp/got")"
}

for o in allow_other allow_other,kernel_cache=off allow_other,xattr; do
	mount_start "$src" "$mnt" -o $o
	check "$o, cold" $denials
	# the file's node by the name the user cannot reach
	cat "$mnt/hid/hl" >/dev/null
	check "$o, a hard link" link
	cat "$mnt/deny" "$mnt/nox/f" >/dev/null
	ls -l "$mnt/nox" "$mnt/nor" >/dev/null
	as_user ls -l "$mnt/nox" >/dev/null 2>&1 || true
	check "$o, after root read and listed" deny nox nor
	# the kernel's cached entries (1 s) are not asked again meanwhile
	sleep 1.1
	check "$o, after root read and listed, 1 s later" $denials
	case $o in
	*xattr*)
		n=$((n + 1))
		check "$o, grants" grant dacl
		;;
	esac
	mount_stop "$mnt"
done
echo "ok: POSIX ACLs of the source hold through the mount"

# the names of a file's extended attributes: trusted.* only to a caller
# with CAP_SYS_ADMIN, as in the local directory (the daemon, which has
# it, listed them to every caller), also in the size asked first
echo x >"$src/xa"
chmod 644 "$src/xa"
if setfattr -n trusted.clio -v 1 "$src/xa" 2>/dev/null &&
   setfattr -n user.clio -v 2 "$src/xa" 2>/dev/null; then
	mount_start "$src" "$mnt" -o allow_other,xattr
	for who in user root nocap; do
		case $who in
		user)  pre="as_user" ;;
		root)  pre="" ;;
		nocap) pre="setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin --" ;;
		esac
		want=$($pre getfattr --absolute-names -m - "$src/xa" 2>&1 | sed -n 's/^\([a-z]*\.[^=]*\).*/\1/p' | sort | tr '\n' ' ')
		got=$($pre getfattr --absolute-names -m - "$mnt/xa" 2>&1 | sed -n 's/^\([a-z]*\.[^=]*\).*/\1/p' | sort | tr '\n' ' ')
		[ "$got" = "$want" ] || fail "listxattr as $who: '$got' through the mount, '$want' in the directory"
		echo "ok: listxattr as $who: $got"
	done
	mount_stop "$mnt"
else
	echo "skip part: $src takes no trusted.* or user.* attributes"
fi
