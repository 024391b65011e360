#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-uri.sh - the nfs:// device's query keys against NFS-Ganesha in
# the test's own namespace: libnfs ignores a key it does not know and reads
# a malformed number as 0 (uid=abc is root), so the device checks the keys
# it passes on: an unknown key, a key without a value, a malformed number
# and a key given twice (port= and nfsport= are one) each fail `clio
# info` with one line naming the value, although the file exists; the
# well-formed keys of libnfs still open it.  A HOST:PORT or an IPv6
# literal, which libnfs cannot take, fails with one line that says how a
# port is given (it said EPERM).
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"

ganesha_start
head -c 10000 /dev/urandom >"$export/f"
url="nfs://127.0.0.1$export/f"

one_line() { # WHAT DEVICE VALUE: clio info fails with one line naming VALUE
	if "$CLIO" info "$2" >"$tmp/out" 2>"$tmp/err"; then
		fail "$1: clio info '$2' succeeded"
	fi
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "$1: not one line"; }
	grep -qF -- "$3" "$tmp/err" || { cat "$tmp/err"; fail "$1: the error does not name '$3'"; }
	echo "ok: $1: $(cat "$tmp/err")"
}
one_line "unknown key" "$url?bogus=1" "bogus=1"
one_line "misspelt key" "$url?mountprot=20048" "mountprot=20048"
one_line "key without a value" "$url?uid" "uid"
one_line "malformed uid" "$url?uid=abc" "abc"
one_line "malformed gid" "$url?gid=-1" "-1"
one_line "malformed mountport" "$url?mountport=20048x" "20048x"
one_line "mountport out of range" "$url?mountport=70000" "70000"
one_line "libnfs's page cache" "$url?pagecache=1" "pagecache=1"
one_line "a key twice" "$url?uid=0&qd=4&uid=1000" "'uid' given twice"
one_line "port= and nfsport=" "$url?port=$nfs_port&nfsport=$nfs_port" "'nfsport' given twice"

for q in "uid=0&gid=0" "mountport=$mnt_port" "nfsport=$nfs_port" "port=$nfs_port&tcp-syncnt=2" \
	 "autoreconnect=1&qd=4"; do
	"$CLIO" info "$url?$q" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "clio info with '$q'"; }
	grep -q "^size: *10000 " "$tmp/out" || { cat "$tmp/out"; fail "'$q': not the file's size"; }
done
echo "ok: the well-formed keys of libnfs open the file"

# a server libnfs cannot take (HOST:PORT, an IPv6 literal) is one line
# that says how a port is given, and not EPERM (libnfs's -1)
for u in "nfs://127.0.0.1:$nfs_port$export/f" "nfs://[::1]$export/f"; do
	one_line "address $u" "$u" "a port is given as ?port=N"
	! grep -q "Operation not permitted" "$tmp/err" || fail "$u: EPERM"
done
exit 0
