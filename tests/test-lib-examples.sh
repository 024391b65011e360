#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-lib-examples.sh - make install into a throwaway root (PREFIX=/usr),
# then build examples/ against it with nothing but pkg-config and run them
# against the shared library (LD_LIBRARY_PATH) and the static one
# (pkg-config --static): the copy is identical and was read in clusters,
# the threaded readers find no bad byte.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/lib/common.sh"

install_tree "$tmp/root"
check_examples "$tmp/root"
