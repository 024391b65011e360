#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-perms.sh - the disk tier in a DIR other users can write (mode
# 1777, as /tmp), root's clio dd against what user 65534 does there: the
# blocks of a file only root can read are in DIR for root alone (every
# directory 0700 and file 0600, an older object's 0755 directory made
# 0700); an object's directory that the user made, or a symbolic link
# the user planted in its place, is not used (the copy runs without the
# tier, with a message, and writes nothing there); a planted link in
# place of another object (whose data and index link to a file of root's)
# is not followed when DIR is culled (the file keeps its bytes); the
# user's clio dd on a file whose object root made runs without the tier.
. "$(dirname "$0")/functions.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "skip: another user's view needs root" >&2
	exit 77
fi
command -v setpriv >/dev/null 2>&1 || { echo "skip: setpriv is missing" >&2; exit 77; }
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

chmod 755 "$tmp"
dc="$tmp/dc"
mkdir "$dc" "$tmp/user"
chmod 1777 "$dc"
chown 65534:65534 "$tmp/user"
head -c 1000000 /dev/urandom >"$tmp/secret"
chmod 600 "$tmp/secret"

# cp_dc IN ARGS...: root's copy of IN through the tier; its stderr in $tmp/err
cp_dc() {
	in=$1
	shift
	rm -f "$tmp/out"
	"$CLIO" dd if="$in" of="$tmp/out" bs=64k --disk-cache="$dc" "$@" 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "clio dd if=$in"; }
	cmp "$in" "$tmp/out" || fail "clio dd if=$in: the bytes differ"
}

# ------------------------------------------------------------ modes
cp_dc "$tmp/secret"
obj=$(grep -lza "path=$tmp/secret\$" "$dc"/*/meta)
obj=$(basename "$(dirname "$obj")")
[ -s "$dc/$obj/data" ] || fail "no data in DIR"
loose=$(find "$dc" -mindepth 1 -perm /077)
[ -z "$loose" ] || fail "others may read or search $(echo $loose)"
as_user cat "$dc/$obj/data" >/dev/null 2>&1 && fail "user 65534 read the cached blocks"
chmod 755 "$dc/$obj"
chmod 644 "$dc/$obj/data"
cp_dc "$tmp/secret"
[ "$(stat -c %a "$dc/$obj")" = 700 ] || fail "an older object's directory stays $(stat -c %a "$dc/$obj")"
echo "ok: what the tier keeps in DIR is root's alone"

# ------------------------------------------------------------ planted objects
rm -rf "${dc:?}/$obj"
as_user mkdir -m 777 "$dc/$obj"
cp_dc "$tmp/secret"
grep -q "runs without it" "$tmp/err" || fail "no message on another user's object: $(cat "$tmp/err")"
[ -z "$(ls "$dc/$obj")" ] || fail "root wrote into the user's directory: $(ls "$dc/$obj")"
rmdir "$dc/$obj"
as_user ln -s "$tmp/user" "$dc/$obj"
cp_dc "$tmp/secret"
grep -q "runs without it" "$tmp/err" || fail "no message on a planted link: $(cat "$tmp/err")"
[ -z "$(ls "$tmp/user")" ] || fail "root followed the link: $(ls "$tmp/user")"
rm "$dc/$obj"
echo "ok: another user's object directory, or a link in its place, is not used"

# ------------------------------------------------------------ culling
echo "root's own" >"$tmp/victim"
as_user sh -c "mkdir $tmp/user/o && ln -s $tmp/victim $tmp/user/o/data &&
	ln -s $tmp/victim $tmp/user/o/index && : >$tmp/user/o/lock &&
	ln -s $tmp/user/o $dc/0123456789abcdef"
cp_dc "$tmp/secret" --disk-cache-size=16
[ "$(cat "$tmp/victim")" = "root's own" ] || fail "culling DIR followed a planted link: the victim has '$(cat "$tmp/victim")'"
echo "ok: culling DIR does not follow a planted link"

# ------------------------------------------------------------ another user's object
head -c 300000 /dev/urandom >"$tmp/pub"
chmod 644 "$tmp/pub"
cp_dc "$tmp/pub"
as_user "$CLIO" dd if="$tmp/pub" of=/dev/null bs=64k --disk-cache="$dc" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "the user's clio dd failed on root's object"; }
grep -q "runs without it" "$tmp/err" || fail "no message on root's object: $(cat "$tmp/err")"
echo "ok: the user's clio dd on root's object runs without the tier"
