# SPDX-License-Identifier: BSD-2-Clause
# clio - build, demo, tests, install and the Debian packages.  `make`
# builds build/clio and the library (build/libclio.so.*, build/libclio.a);
# `make demo` runs the seed experiments; `make check` runs every test
# (plain, then ASan+UBSan, then TSan on the threaded ones); `make install`
# installs under PREFIX (DESTDIR for staging); `make deb` builds the Debian
# packages into build/deb/.

BUILD   ?= build
CC      ?= cc
OPT     ?= -O2
SAN     ?=
DEFS    ?=
CFLAGS  += -std=c11 -D_GNU_SOURCE $(OPT) -g -Wall -Wextra -Wshadow -Wvla \
           -Iinclude -Ilib -Icli -pthread $(SAN) $(DEFS) $(CPPFLAGS)
LDLIBS  += -pthread -lm $(URING_LIBS) $(NBD_LIBS) $(NFS_LIBS) $(DL_LIBS)
LDFLAGS += $(SAN)
# libfuse 3 for `clio mount` (fuse/ only)
FUSE_CFLAGS = $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE_LIBS   = $(shell pkg-config --libs fuse3 2>/dev/null || echo -lfuse3)
# liburing for the file backend's io_uring engine (lib/dev/uring.c) and
# clio bench core's peer (its io_uring reads)
URING_LIBS  = $(shell pkg-config --libs liburing 2>/dev/null || echo -luring)
# libnbd for the NBD client backend (lib/dev/nbd.c)
NBD_LIBS    = $(shell pkg-config --libs libnbd 2>/dev/null || echo -lnbd)
# libnfs for the NFS client backend (lib/dev/nfs.c)
NFS_LIBS    = $(shell pkg-config --libs libnfs 2>/dev/null || echo -lnfs)
# librbd and librados for the Ceph RBD backend (lib/dev/rbd.c) are not
# linked: lib/dev/rbdlib.c loads them at the first rbd: open
DL_LIBS     = -ldl

# nbdkit's plugin header for the plugin behind clio serve (nbdkit/)
NBDKIT_CFLAGS = $(shell pkg-config --cflags nbdkit 2>/dev/null)

# where `make install` puts things (DESTDIR is prepended to each)
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
INSTALL    ?= install
OBJCOPY    ?= objcopy

# The library's version, from include/clio.h; the soname changes with the
# major number only.
version_part = $(shell sed -n 's/^\#define CLIO_VERSION_$(1)  *\([0-9][0-9]*\).*/\1/p' include/clio.h)
VERSION_MAJOR := $(call version_part,MAJOR)
VERSION := $(VERSION_MAJOR).$(call version_part,MINOR).$(call version_part,PATCH)
SONAME  := libclio.so.$(VERSION_MAJOR)
SOFILE  := libclio.so.$(VERSION)

# Plain `make` needs a few Debian packages (scripts/deps.sh build); say
# which are missing before compiling anything.  The goals that install
# them, or need none, are left alone.
NO_DEPS_CHECK := deps demo bench check clean uninstall deb
ifeq ($(filter $(NO_DEPS_CHECK),$(MAKECMDGOALS)),)
MISSING_DEPS := $(shell sh scripts/deps.sh --missing build \
	$(if $(filter tests check-%,$(MAKECMDGOALS)),test))
ifneq ($(strip $(MISSING_DEPS)),)
$(error missing Debian packages: $(strip $(MISSING_DEPS)); `make deps` installs them)
endif
endif

# quiet by default; V=1 shows the commands
ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @echo "  $(1)	$(2)"
endif

LIB_SRC := $(wildcard lib/*.c lib/dev/*.c)
# the clio command: cli/ (its main, dd, info, stat, serve), fuse/ (clio
# mount), bench/ (clio bench)
CLI_SRC := $(wildcard cli/*.c fuse/*.c bench/*.c)
TEST_SRC := $(wildcard tests/unit/test-*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# helpers of the end-to-end tests (not run as unit tests: no test- prefix)
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tests/tools/%)


.PHONY: all deps demo bench check check-plain check-asan check-tsan tests clean \
	install uninstall deb

# build/libclio-internal.a: every library object with every global, for the
# clio command and the unit tests, which use internal calls.  What is
# installed exports clio_* only: libclio.so through a version script,
# libclio.a as one relocatable object whose other globals are made local.
all: $(BUILD)/clio $(BUILD)/libclio.a $(BUILD)/$(SOFILE) $(BUILD)/nbdkit-clio-plugin.so \
	$(BUILD)/nbdkit-clio-filter.so

$(BUILD)/obj/%.o: %.c include/clio.h lib/internal.h $(wildcard lib/*.h) $(wildcard lib/dev/*.h) \
		$(wildcard cli/*.h fuse/*.h bench/*.h)
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

MOUNT_OBJ = $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard fuse/*.c))
$(MOUNT_OBJ): CFLAGS += $(FUSE_CFLAGS)
$(MOUNT_OBJ): fuse/mount.h cli/cli.h
# clio serve looks for the plugin in LIBDIR/clio too
$(BUILD)/obj/cli/serve.o: CFLAGS += -DCLIO_LIBDIR='"$(LIBDIR)"'
$(BUILD)/obj/bench/benchnbd.o: CFLAGS += -DCLIO_LIBDIR='"$(LIBDIR)"'

# every library object can go into the shared library
$(LIB_OBJ): CFLAGS += -fPIC

# the nbdkit plugin: a front end (clio.h and util.h) with the library inside
PLUGIN_OBJ = $(BUILD)/obj/nbdkit/clio-plugin.o $(BUILD)/obj/nbdkit/prefault.o \
	$(BUILD)/obj/nbdkit/flusherr.o $(BUILD)/obj/nbdkit/sigsync.o
$(PLUGIN_OBJ): CFLAGS += -fPIC $(NBDKIT_CFLAGS)
$(PLUGIN_OBJ): nbdkit/prefault.h nbdkit/flusherr.h nbdkit/sigsync.h

$(BUILD)/nbdkit-clio-plugin.so: $(PLUGIN_OBJ) $(BUILD)/libclio-internal.a
	$(call say,LD,$@)
	$(Q)$(CC) -shared -Wl,--exclude-libs,ALL $(LDFLAGS) -o $@ \
		$(PLUGIN_OBJ) $(INTERNAL) $(LDLIBS)

# the nbdkit filter: the same, with the plugin below it as a device
FILTER_OBJ = $(BUILD)/obj/nbdkit/clio-filter.o $(BUILD)/obj/nbdkit/filterdev.o \
	$(BUILD)/obj/nbdkit/prefault.o $(BUILD)/obj/nbdkit/flusherr.o \
	$(BUILD)/obj/nbdkit/sigsync.o
$(FILTER_OBJ): CFLAGS += -fPIC $(NBDKIT_CFLAGS)
$(FILTER_OBJ): nbdkit/filterdev.h nbdkit/prefault.h nbdkit/flusherr.h nbdkit/sigsync.h

$(BUILD)/nbdkit-clio-filter.so: $(FILTER_OBJ) $(BUILD)/libclio-internal.a
	$(call say,LD,$@)
	$(Q)$(CC) -shared -Wl,--exclude-libs,ALL $(LDFLAGS) -o $@ \
		$(FILTER_OBJ) $(INTERNAL) $(LDLIBS)

$(BUILD)/libclio-internal.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(call say,AR,$@)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

# the installed static library has no NBD, NFS or RBD backend (lib/dev.h:
# dev_nbd_open, dev_nfs_open, dev_rbd_open, weak references); what links
# the internal archive asks for them by name
INTERNAL = -Wl,--undefined=dev_nbd_open -Wl,--undefined=dev_nfs_open \
	-Wl,--undefined=dev_rbd_open $(BUILD)/libclio-internal.a
STATIC_OBJ := $(filter-out $(BUILD)/obj/lib/dev/nbd.o $(BUILD)/obj/lib/dev/nfs.o \
	$(BUILD)/obj/lib/dev/nfsxprt.o $(BUILD)/obj/lib/dev/nfssim.o $(BUILD)/obj/lib/dev/rbd.o \
	$(BUILD)/obj/lib/dev/rbdlib.o,$(LIB_OBJ))
$(BUILD)/libclio.a: $(STATIC_OBJ)
	@mkdir -p $(dir $@)
	$(call say,AR,$@)
	$(Q)rm -f $@ $(BUILD)/obj/libclio-all.o $(BUILD)/obj/libclio.o
	$(Q)$(LD) -r -o $(BUILD)/obj/libclio-all.o $^
	$(Q)$(OBJCOPY) -w --keep-global-symbol='clio_*' $(BUILD)/obj/libclio-all.o $(BUILD)/obj/libclio.o
	$(Q)ar rcs $@ $(BUILD)/obj/libclio.o

$(BUILD)/$(SOFILE): $(LIB_OBJ) lib/libclio.map
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=lib/libclio.map \
		-Wl,--no-undefined $(LDFLAGS) -o $@ $(LIB_OBJ) $(LDLIBS)
	$(Q)ln -sf $(SOFILE) $(BUILD)/$(SONAME)
	$(Q)ln -sf $(SONAME) $(BUILD)/libclio.so

$(BUILD)/clio: $(CLI_OBJ) $(BUILD)/libclio-internal.a
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(INTERNAL) $(FUSE_LIBS) $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libclio-internal.a tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(call say,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(INTERNAL) $(LDFLAGS) -lcmocka $(LDLIBS)

$(BUILD)/tests/tools/%: tests/tools/%.c
	@mkdir -p $(dir $@)
	$(call say,CC,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) $(LDLIBS)

# clioctl drives the library through its public calls
$(BUILD)/tests/tools/clioctl: tests/tools/clioctl.c include/clio.h $(BUILD)/libclio-internal.a
	@mkdir -p $(dir $@)
	$(call say,CC,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(INTERNAL) $(LDFLAGS) $(LDLIBS)

# nfsthreads too: threads on one nfs:// object (tests/test-nfs-threads.sh)
$(BUILD)/tests/tools/nfsthreads: tests/tools/nfsthreads.c include/clio.h $(BUILD)/libclio-internal.a
	@mkdir -p $(dir $@)
	$(call say,CC,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(INTERNAL) $(LDFLAGS) $(LDLIBS)

# wbfault too: write-back across a device fault (tests/test-rbd-faults.sh)
$(BUILD)/tests/tools/wbfault: tests/tools/wbfault.c include/clio.h $(BUILD)/libclio-internal.a
	@mkdir -p $(dir $@)
	$(call say,CC,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(INTERNAL) $(LDFLAGS) $(LDLIBS)

tests: all $(TEST_BIN) $(TOOL_BIN)

deps:
	@sh scripts/deps.sh

demo: deps all
	@sh scripts/demo.sh $(BUILD)/clio

bench: deps all
	@sh scripts/bench.sh $(BUILD)/clio

# One build per flavour, each in its own directory, built with a job per
# core; the tests of a flavour run two at a time (tests/run-tests.sh,
# TEST_JOBS), those in tests/serial.list alone.
CHECK_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
check: deps
	$(MAKE) check-plain
	$(MAKE) check-asan
	$(MAKE) check-tsan
	@cat build-debug/test-summary build-asan/test-summary build-tsan/test-summary | \
		awk '{ p += $$1; f += $$2; s += $$3 } END { printf "total: %d passed, %d failed, %d skipped\n", p, f, s }'

check-plain:
	$(MAKE) -j$(CHECK_JOBS) BUILD=build-debug DEFS=-DCLIO_DEBUG tests
	sh tests/run-tests.sh build-debug plain

check-asan:
	$(MAKE) -j$(CHECK_JOBS) BUILD=build-asan OPT=-O1 DEFS=-DCLIO_DEBUG \
		SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" tests
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		sh tests/run-tests.sh build-asan asan

check-tsan:
	$(MAKE) -j$(CHECK_JOBS) BUILD=build-tsan OPT=-O1 SAN="-fsanitize=thread" tests
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
		sh tests/run-tests.sh build-tsan tsan

# The public calls of include/clio.h, each of which gets a man page that
# redirects to libclio(3).
paren := (
PUBLIC_CALLS = $(shell sed -n '/^typedef/d; s/^[a-z].*[ *]\(clio_[a-z0-9_]*\)$(paren).*/\1/p' include/clio.h)

# The pkg-config file is written at install time, for this PREFIX and LIBDIR.
install: all
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3
	$(INSTALL) -m 755 $(BUILD)/clio $(DESTDIR)$(BINDIR)/clio
	$(INSTALL) -d $(DESTDIR)$(LIBDIR)/clio
	$(INSTALL) -m 755 $(BUILD)/nbdkit-clio-plugin.so $(DESTDIR)$(LIBDIR)/clio/nbdkit-clio-plugin.so
	$(INSTALL) -m 755 $(BUILD)/nbdkit-clio-filter.so $(DESTDIR)$(LIBDIR)/clio/nbdkit-clio-filter.so
	$(INSTALL) -m 644 $(BUILD)/$(SOFILE) $(DESTDIR)$(LIBDIR)/$(SOFILE)
	ln -sf $(SOFILE) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libclio.so
	$(INSTALL) -m 644 $(BUILD)/libclio.a $(DESTDIR)$(LIBDIR)/libclio.a
	$(INSTALL) -m 644 include/clio.h $(DESTDIR)$(INCLUDEDIR)/clio.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
		lib/libclio.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/clio.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/clio.pc
	$(INSTALL) -m 644 man/clio.1 $(DESTDIR)$(MANDIR)/man1/clio.1
	$(INSTALL) -m 644 man/nbdkit-clio-plugin.1 $(DESTDIR)$(MANDIR)/man1/nbdkit-clio-plugin.1
	$(INSTALL) -m 644 man/nbdkit-clio-filter.1 $(DESTDIR)$(MANDIR)/man1/nbdkit-clio-filter.1
	$(INSTALL) -m 644 man/libclio.3 $(DESTDIR)$(MANDIR)/man3/libclio.3
	@for f in $(PUBLIC_CALLS); do \
		echo ".so man3/libclio.3" > $(DESTDIR)$(MANDIR)/man3/$$f.3 || exit 1; \
		chmod 644 $(DESTDIR)$(MANDIR)/man3/$$f.3; \
	done
	@echo "  installed the man page redirects: $(words $(PUBLIC_CALLS)) in $(DESTDIR)$(MANDIR)/man3"

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/clio/nbdkit-clio-plugin.so \
		$(DESTDIR)$(MANDIR)/man1/nbdkit-clio-plugin.1 \
		$(DESTDIR)$(LIBDIR)/clio/nbdkit-clio-filter.so \
		$(DESTDIR)$(MANDIR)/man1/nbdkit-clio-filter.1
	-rmdir $(DESTDIR)$(LIBDIR)/clio 2>/dev/null
	rm -f $(DESTDIR)$(BINDIR)/clio $(DESTDIR)$(LIBDIR)/$(SOFILE) \
		$(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libclio.so \
		$(DESTDIR)$(LIBDIR)/libclio.a $(DESTDIR)$(INCLUDEDIR)/clio.h \
		$(DESTDIR)$(PKGCONFIGDIR)/clio.pc $(DESTDIR)$(MANDIR)/man1/clio.1 \
		$(DESTDIR)$(MANDIR)/man3/libclio.3
	@for f in $(PUBLIC_CALLS); do rm -f $(DESTDIR)$(MANDIR)/man3/$$f.3; done

# The Debian packages, built from a copy of the tree into $(BUILD)/deb/
# (DEB_BUILD_OPTIONS=nocheck skips the unit tests at build time).
deb:
	@sh scripts/deps.sh build test deb
	@sh scripts/deb.sh $(BUILD)/deb

clean:
	rm -rf build build-debug build-asan build-tsan
