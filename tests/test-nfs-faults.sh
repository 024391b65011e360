#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-faults.sh - the nfs:// device keeps what it acknowledged when
# NFS-Ganesha dies.  One process (tests/tools/clioctl) keeps its cache
# and device open while the script acts on the server between its calls:
#  1. the verifier path: writes are written back (UNSTABLE WRITEs, no
#     COMMIT), ganesha is killed (SIGKILL) and, as a crash would, its
#     file loses them (the old contents put back), ganesha restarts with
#     a new write verifier; fsync then succeeds and the export's file
#     equals the model byte for byte: the device saw the verifier change
#     (verifier_changes >= 1) and sent the writes again (resends > 0),
#     the older of two overlapping ones first;
#  2. the server down during fsync, the data dirty in the cache: fsync
#     fails with ETIMEDOUT or EIO (timeo=2: in seconds), the cache still
#     holds the data dirty, and fsync after the restart succeeds with the
#     data on the server;
#  3. the server down during fsync, the data written back but not
#     committed: fsync fails, the device still keeps the data (kept > 0),
#     the restarted server lost it, and fsync after the restart resends
#     and succeeds;
#  4. after a crash and before fsync, reads from the device show what it
#     acknowledged (also past the server's old end of file), and a newer
#     write acknowledged by the restarted server is not overwritten by
#     the resend of an older lost one it overlaps.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"

clioctl=${CLIOCTL:-$(dirname "$CLIO")/tests/tools/clioctl}
[ -x "$clioctl" ] || fail "$clioctl not built (make tests)"

ganesha_start
proxy_start 0
head -c 4000000 /dev/urandom >"$export/f"
cp "$export/f" "$tmp/model"

mkfifo "$tmp/in" "$tmp/out"
"$clioctl" "nfs://127.0.0.1$export/f?$pq&timeo=2" "$tmp/model" <"$tmp/in" >"$tmp/out" 2>"$tmp/ctl.err" &
ctl_pid=$!
trap 'kill "$ctl_pid" 2>/dev/null; ganesha_all_stop; rm -rf "$tmp"' EXIT
exec 3>"$tmp/in" 4<"$tmp/out"

# ctl CMD...: its answer in $ans ("ok [VALUE]" or "err ERRNO TEXT")
ctl() {
	echo "$*" >&3
	read -r ans <&4 || { cat "$tmp/ctl.err" >&2; fail "clioctl: no answer to '$*'"; }
}
ok() { ctl "$@"; case $ans in ok*) ;; *) fail "$*: $ans";; esac; }
value() { ok "$@"; echo "${ans#ok }"; }

# A crash of the server: killed, its file back to what was committed (the
# unstable writes lost), and restarted in the next second (ganesha's
# write verifier is its start time in seconds).
crash_and_restart() {
	ganesha_kill
	cp "$tmp/committed" "$export/f"
	s=$(date +%s)
	while [ "$(date +%s)" = "$s" ]; do sleep 0.05; done
	ganesha_start
}

# ------------------------------------------------------------ 1
cp "$export/f" "$tmp/committed"
ok write 1000 300000 1
ok write 2000001 1500000 2
ok write 3999000 70000 3
ok writeback
# a newer write inside an older one, both kept: resent in their order
ok write 50000 1000 8
ok write 2500000 40000 9
ok writeback
kept=$(value param kept)
[ "$kept" -gt 0 ] || fail "written back but nothing kept before the COMMIT"
crash_and_restart
cmp -s "$tmp/model" "$export/f" && fail "the crash lost nothing: the test proves nothing"
ok fsync
cmp "$tmp/model" "$export/f" || fail "after fsync the server lacks what was acknowledged"
vc=$(value param verifier_changes)
rs=$(value param resends)
[ "$vc" -ge 1 ] || fail "no verifier change seen ($vc)"
[ "$rs" -gt 0 ] || fail "nothing sent again ($rs resends)"
[ "$(value param kept)" -eq 0 ] || fail "data still kept after a successful COMMIT"
echo "ok: killed between WRITE and COMMIT: $kept bytes kept, $vc verifier change, $rs resends, the file byte for byte"

# ------------------------------------------------------------ 2
cp "$export/f" "$tmp/committed"
ok write 5000 10000 4
ok write 1234567 100000 5
ganesha_stop
ctl fsync
case $ans in err*) ;; *) fail "fsync with the server down: $ans";; esac
# the server's unreachable as a soft NFS mount says it (libnfs's EFAULT,
# "Bad address", for a connection closed under an RPC is no caller's)
case $ans in "err 110 "* | "err 5 "*) ;; *) fail "fsync with the server down: $ans, not ETIMEDOUT or EIO";; esac
echo "ok: fsync with the server down: $ans"
[ "$(value dirty)" -gt 0 ] || fail "the data is no longer dirty after the failed fsync"
ganesha_start
ok fsync
[ "$(value dirty)" -eq 0 ] || fail "dirty data after a successful fsync"
cmp "$tmp/model" "$export/f" || fail "after the retried fsync the server lacks the data"
echo "ok: a retry after the server returned succeeded, the file byte for byte"

# ------------------------------------------------------------ 3
cp "$export/f" "$tmp/committed"
ok write 777777 200000 6
ok writeback
ganesha_stop
ctl fsync
case $ans in err*) ;; *) fail "COMMIT with the server down: $ans";; esac
kept=$(value param kept)
[ "$kept" -gt 0 ] || fail "the failed COMMIT dropped the kept data"
rs0=$(value param resends)
cp "$tmp/committed" "$export/f" # the crash lost the uncommitted write
s=$(date +%s)
while [ "$(date +%s)" = "$s" ]; do sleep 0.05; done
ganesha_start
ok fsync
rs1=$(value param resends)
[ "$rs1" -gt "$rs0" ] || fail "no resend after the restart ($rs0, $rs1)"
cmp "$tmp/model" "$export/f" || fail "after the server came back the file differs"
echo "ok: COMMIT failed with the server down ($kept bytes kept), then resent ($((rs1 - rs0))) and committed"

# ------------------------------------------------------------ 4
# after the crash, before any fsync: the device reads what it
# acknowledged (the kept writes over the server's old data, and past
# its old end); a newer write acknowledged by the restarted server over
# an older lost one survives the older one's resend
cp "$export/f" "$tmp/committed"
size0=$(stat -c %s "$export/f")
ok write 100000 300000 10
ok write $((size0 + 30000)) 50000 11
ok writeback
crash_and_restart
ctl devread 98304 409600
case $ans in "ok 409600") ;; *) fail "reading the lost writes back through the device: $ans";; esac
end=$((size0 + 80000))
ctl devread $((size0 - 4096)) $((end - size0 + 4096))
case $ans in "ok $((end - size0 + 4096))") ;; *) fail "reading the lost growth back: $ans";; esac
echo "ok: after the crash the device reads the acknowledged data, the lost growth included"
ok write 200000 10000 12
ok writeback
ok fsync
cmp "$tmp/model" "$export/f" || fail "the newer write did not survive the older one's resend"
echo "ok: a newer write over a lost older one survived its resend"

ok quit
wait "$ctl_pid" || fail "clioctl exited with an error"
exit 0
