#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-dd-samefile.sh - clio dd with if= and of= naming the same file,
# against GNU dd 9.1 byte for byte (tests/dd-compare.sh): GNU's reads see
# its own writes and its truncation at seek=, so the file ends as GNU's
# does: emptied without conv=notrunc, a block smeared forward by an
# overlapping seek=, data shifted back by skip=, appended to itself.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/dd-compare.sh"

compare_rows <<'ROWS'
old if=@OUT@ of=@OUT@ bs=1000
old if=@OUT@ of=@OUT@ bs=1000 skip=10
old if=@OUT@ of=@OUT@ bs=1000 conv=notrunc
old if=@OUT@ of=@OUT@ bs=1000 count=5 seek=1 conv=notrunc
old if=@OUT@ of=@OUT@ bs=1000 skip=2 conv=notrunc
old if=@OUT@ of=@OUT@ bs=1000 skip=3 seek=1 conv=notrunc
old if=@OUT@ of=@OUT@ ibs=700 obs=1300 seek=2 count=10 conv=notrunc
old if=@OUT@ of=@OUT@ bs=4k seek=2 count=5
old if=@OUT@ of=@OUT@ bs=1000 seek=10 count=5
old if=@OUT@ of=@OUT@ bs=1000 count=3 oflag=append conv=notrunc
old if=@OUT@ of=@OUT@ bs=1000 skip=1 conv=sparse,notrunc
old if=@OUT@ of=@OUT@ bs=1 seek=1 count=3000 conv=notrunc
old if=@OUT@ of=@OUT@ bs=512 skip=2B conv=notrunc status=noxfer
ROWS
echo "ok: $rows rows"
exit 0
