#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-posix.sh - clio mount of a directory against the same
# calls on a local directory: tests/tools/fsprobe runs a fixed list of
# operations (the errno of each refusal: O_EXCL, O_DIRECTORY,
# O_NOFOLLOW, EISDIR, ENOTEMPTY, rename and link of the wrong kinds,
# RENAME_NOREPLACE and RENAME_EXCHANGE, rename onto another link of the
# same file, trailing slashes, ENAMETOOLONG, fifos; the directory's
# entries and their types; unlink, rename and rename over an open file,
# hard links, O_APPEND with pwrite, O_RDONLY|O_TRUNC, sparse files and
# lseek, st_blocks of a sparse file written and held open,
# fallocate's modes, set and omitted times, which of mtime and
# ctime each operation moves (O_TRUNC of an empty file and chown to -1
# -1 included), st_blocks of a hole held open, modes, owners, access;
# with -o xattr the extended attribute calls) and prints what it got;
# the mount must print the same, line by line, in each caching mode,
# for root and (with allow_other) for a user.  Two differences are the
# kernel's, and left out: O_TMPFILE is refused with EOPNOTSUPP (this
# libfuse has no tmpfile request), and under the kernel's writeback
# cache (kernel_cache=on, the default) the kernel keeps a file's times
# itself and moves them at a truncation only when the size changes.
# SEEK_DATA and SEEK_HOLE find the holes of a file with data not yet
# written back as locally; with kernel_cache=off the kernel answers them
# itself (all data up to the size), which is checked instead.  16
# programs at once writing and asking for a hole (each such lseek makes
# the kernel write its dirty pages to the daemon first) all end.
# Where the source's file system has no FALLOC_FL_ZERO_RANGE (tmpfs),
# the mount zeroes the range itself: those lines are compared only
# where it has.
set -e
. "$(dirname "$0")/mount-common.sh"
probe=$(dirname "$CLIO")/tests/tools/fsprobe
[ -x "$probe" ] || fail "$probe is missing (make tests builds it)"

# as root, also as a user made for the test (removed again with its
# group), in a directory of its own, through a mount with allow_other
user= made_user=
if [ "$(id -u)" -eq 0 ] && command -v useradd >/dev/null 2>&1 &&
	command -v setpriv >/dev/null 2>&1; then
	user=cliopx$$
	trap 'cleanup; [ -n "$made_user" ] && userdel "$user" 2>/dev/null; getent group "$user" >/dev/null && [ -n "$made_user" ] && groupdel "$user" 2>/dev/null; true' EXIT
	getent passwd "$user" >/dev/null && fail "user $user exists already"
	getent group "$user" >/dev/null && fail "group $user exists already"
	useradd -M -U -s /bin/sh -d /nonexistent "$user" && made_user=1
	chmod 755 "$tmp"
	cp "$probe" "$tmp/fsprobe"
	chmod 755 "$tmp/fsprobe"
else
	echo "note: not root: the calls are made by the mount's owner only" >&2
fi

n=0
for o in "" kernel_cache=off cache=off xattr xattr,kernel_cache=off \
	${user:+user user,kernel_cache=off user,xattr}; do
	n=$((n + 1))
	x= as= p=$probe mo=${o#user}
	mo=${mo#,}
	case $o in
	*xattr*) x=xattr ;;
	esac
	mkdir "$tmp/local$n" "$tmp/src$n" "$tmp/mnt$n"
	case $o in
	user*)
		as="setpriv --reuid=$user --regid=$user --init-groups --" p=$tmp/fsprobe
		mo=allow_other${mo:+,$mo}
		chown "$user:$user" "$tmp/local$n" "$tmp/src$n"
		chmod 755 "$tmp/mnt$n"
		;;
	esac
	$as "$p" "$tmp/local$n" $x >"$tmp/want" 2>&1 || fail "fsprobe on a local directory"
	grep -q '^open O_EXCL existing: EEXIST$' "$tmp/want" ||
		fail "local reference: $(head -n 3 "$tmp/want")"
	mount_start "$tmp/src$n" "$tmp/mnt$n" ${mo:+-o $mo}
	$as "$p" "$tmp/mnt$n" $x >"$tmp/got" 2>&1 || fail "fsprobe on the mount (${o:-default})"
	mount_stop "$tmp/mnt$n"
	grep -q '^O_TMPFILE: EOPNOTSUPP$' "$tmp/got" || grep -q '^O_TMPFILE: ok$' "$tmp/got" ||
		fail "${o:-default}: O_TMPFILE: $(grep '^O_TMPFILE:' "$tmp/got")"
	# the kernel's differences (see above)
	skip='tmpfile|TMPFILE'
	case $o in
	*kernel_cache=off*)
		# SEEK_DATA and SEEK_HOLE: the kernel's answer, data to the end
		grep -q '^lseek SEEK_DATA in the hole: 4096$' "$tmp/got" ||
			fail "$o: $(grep '^lseek SEEK_DATA in the hole' "$tmp/got")"
		skip="$skip|^lseek SEEK_(DATA in the hole|HOLE at 0|HOLE in the data):" ;;
	*) skip="$skip|^truncate to the same size:" ;;
	esac
	# where the source has no ZERO_RANGE (tmpfs) the mount's own zeroing
	# stands in for it
	grep -q '^zero range: EOPNOTSUPP$' "$tmp/want" && skip="$skip|^zero range"
	for f in want got; do
		grep -Ev "$skip" "$tmp/$f" >"$tmp/$f.cmp" || true
	done
	if ! diff "$tmp/want.cmp" "$tmp/got.cmp" >"$tmp/diff"; then
		cat "$tmp/diff" >&2
		fail "${o:-default}: the mount answers otherwise than a local directory"
	fi
	echo "ok: ${o:-default}: $(wc -l <"$tmp/got.cmp") results as locally"
done

# 16 lseeks at once, each waiting for the kernel's WRITEs of its file's
# dirty pages, must not take every worker of the daemon
xprobe=$(dirname "$CLIO")/tests/tools/xprobe
mkdir "$tmp/srcs" "$tmp/mnts"
mount_start "$tmp/srcs" "$tmp/mnts"
pids=
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
	"$xprobe" seekhole "$tmp/mnts/f$i" &
	pids="$pids $!"
done
( sleep 30; kill -TERM $pids 2>/dev/null ) &
watchdog=$!
for p in $pids; do
	wait "$p" || { kill $watchdog; fail "lseek SEEK_HOLE by 16 programs at once: hung or failed"; }
done
kill $watchdog 2>/dev/null || true
mount_stop "$tmp/mnts"
echo "ok: 16 programs at once: SEEK_HOLE answered"

