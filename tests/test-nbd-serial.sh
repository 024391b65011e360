#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-serial.sh - the clio filter over a plugin that is not
# thread-safe (nbdkit's eval plugin with thread_model
# serialize_all_requests, on a Unix socket) calls it one call at a time:
# nbdkit serializes the clients' requests, but the cache's read-ahead and
# write-behind run on worker threads of their own, which called the
# plugin in parallel.  The plugin's scripts fail a call that enters while
# another runs (EIO), and log it; clio dd writes 4 MiB through the filter
# with fsync and reads it back, compared, and the log must be empty.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
nbd_with_clio
[ -f "$(nbdkit --dump-plugin eval 2>/dev/null | sed -n 's/^path=//p')" ] ||
	{ echo "nbdkit's eval plugin not installed"; exit 77; }
size=4194304
truncate -s $size "$tmp/disk"
head -c $size /dev/urandom >"$tmp/pat"
# call NAME DD-ARGS...: the body of a script: alone, or it fails
cat >"$tmp/call" <<EOF
#!/bin/sh
if ! mkdir "$tmp/busy" 2>/dev/null; then
	echo "\$1 at \$4 entered while another call ran" >>"$tmp/overlap"
	echo "EIO \$1 at \$4: another call is running" >&2
	exit 1
fi
case \$1 in
pread) dd if="$tmp/disk" bs=65536 skip=\$4 count=\$3 iflag=skip_bytes,count_bytes status=none;;
pwrite) dd of="$tmp/disk" bs=65536 seek=\$4 oflag=seek_bytes conv=notrunc status=none;;
esac
r=\$?
sleep 0.01
rmdir "$tmp/busy"
exit \$r
EOF
chmod +x "$tmp/call"
nbd_start --filter="$filter" eval get_size="echo $size" \
	pread="$tmp/call \"\$@\"" pwrite="$tmp/call \"\$@\"" flush='exit 0' \
	thread_model='echo serialize_all_requests' bsize=64k maxphys=256k
"$CLIO" dd if="$tmp/pat" of="$uri" bs=64k conv=fsync,notrunc 2>"$tmp/err" ||
	{ cat "$tmp/err" "$tmp/overlap" 2>/dev/null; fail "clio dd into the filter"; }
"$CLIO" dd if="$uri" of="$tmp/back" bs=1M 2>"$tmp/err" ||
	{ cat "$tmp/err" "$tmp/overlap" 2>/dev/null; fail "clio dd out of the filter"; }
cmp "$tmp/back" "$tmp/pat" || fail "the bytes read back differ"
cmp "$tmp/disk" "$tmp/pat" || fail "the plugin's file differs"
[ ! -s "$tmp/overlap" ] || { head -n 5 "$tmp/overlap"; fail "the plugin was called in parallel"; }
echo "ok: 4 MiB through the filter over a serialize_all_requests plugin, one call at a time"
exit 0
