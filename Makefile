# clio - build, demo and tests.  `make` builds build/clio and
# build/libclio.a; `make demo` runs the seed experiments; `make check`
# runs every test (plain, then ASan+UBSan, then TSan on the threaded ones).

BUILD   ?= build
CC      ?= cc
OPT     ?= -O2
SAN     ?=
DEFS    ?=
CFLAGS  += -std=c11 -D_GNU_SOURCE $(OPT) -g -Wall -Wextra -Wshadow -Wvla \
           -Iinclude -Ilib -pthread $(SAN) $(DEFS)
LDLIBS  += -pthread -lm $(URING_LIBS)
LDFLAGS += $(SAN)
# liburing for the file backend's io_uring engine (lib/dev/uring.c)
URING_LIBS = $(shell pkg-config --libs liburing 2>/dev/null || echo -luring)
# libfuse 3 for `clio mount` (cli/mount*.c only)
FUSE_CFLAGS = $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE_LIBS   = $(shell pkg-config --libs fuse3 2>/dev/null || echo -lfuse3)

# quiet by default; V=1 shows the commands
ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @echo "  $(1)	$(2)"
endif

LIB_SRC := $(wildcard lib/*.c lib/dev/*.c)
CLI_SRC := $(wildcard cli/*.c)
TEST_SRC := $(wildcard tests/unit/test-*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# helpers of the end-to-end tests (not run as unit tests: no test- prefix)
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tests/tools/%)


.PHONY: all deps demo bench check check-plain check-asan check-tsan tests clean

all: $(BUILD)/clio $(BUILD)/libclio.a

$(BUILD)/obj/%.o: %.c include/clio.h lib/internal.h $(wildcard lib/*.h) $(wildcard lib/dev/*.h) \
		$(wildcard cli/*.h)
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

MOUNT_OBJ = $(BUILD)/obj/cli/mount.o $(BUILD)/obj/cli/mountfs.o $(BUILD)/obj/cli/mountstats.o \
	$(BUILD)/obj/cli/mountahead.o
$(MOUNT_OBJ): CFLAGS += $(FUSE_CFLAGS)
$(MOUNT_OBJ): cli/mount.h cli/cli.h

$(BUILD)/libclio.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(call say,AR,$@)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(BUILD)/clio: $(CLI_OBJ) $(BUILD)/libclio.a
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libclio.a $(FUSE_LIBS) $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libclio.a tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(call say,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(BUILD)/libclio.a $(LDFLAGS) -lcmocka $(LDLIBS)

$(BUILD)/tests/tools/%: tests/tools/%.c
	@mkdir -p $(dir $@)
	$(call say,CC,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) $(LDLIBS)

tests: all $(TEST_BIN) $(TOOL_BIN)

deps:
	@sh scripts/deps.sh

demo: deps all
	@sh scripts/demo.sh $(BUILD)/clio

bench: deps all
	@sh scripts/bench.sh $(BUILD)/clio

# One build per flavour, each in its own directory.
check: deps
	$(MAKE) check-plain
	$(MAKE) check-asan
	$(MAKE) check-tsan
	@cat build-debug/test-summary build-asan/test-summary build-tsan/test-summary | \
		awk '{ p += $$1; f += $$2; s += $$3 } END { printf "total: %d passed, %d failed, %d skipped\n", p, f, s }'

check-plain:
	$(MAKE) BUILD=build-debug DEFS=-DCLIO_DEBUG tests
	sh tests/run-tests.sh build-debug plain

check-asan:
	$(MAKE) BUILD=build-asan OPT=-O1 DEFS=-DCLIO_DEBUG \
		SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" tests
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		sh tests/run-tests.sh build-asan asan

check-tsan:
	$(MAKE) BUILD=build-tsan OPT=-O1 SAN="-fsanitize=thread" tests
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
		sh tests/run-tests.sh build-tsan tsan

clean:
	rm -rf build build-debug build-asan build-tsan
