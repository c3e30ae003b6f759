# ctsdb - build, test, run. See README.md. Every flavour builds in its own directory:
#   build/release (default, -O2), build/asan (SAN=1: AddressSanitizer + UBSan).
# Sources are found by wildcard: a new module or test needs no Makefile change.
#   library:    storage/*.c storage/engine/*.c schema/*.c query/*.c tsd/*.c  -> libctsdb.a
#   commands:   tools/*.c (tools/main.c is the entry; each tools/cmd_*.c defines one
#               `const struct tool_command tool_cmd_<name>`, collected into a generated table)
#   unit tests: tests/unit/<layer>/test_<module>.c, one cmocka program each
# Optional parts hook in through their own fragments (storage/bigtable/bigtable.mk, ...).
# Output is quiet: one "  CC      path" line per step (and `make run` folds those into one
# progress line); V=1 prints the full commands. Compiler errors and warnings always print whole.

SAN     ?= 0
ifeq ($(SAN),1)
  BUILD ?= build/asan
  OPT   := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
  SANLD := -fsanitize=address,undefined
else
  BUILD ?= build/release
  OPT   := -O2
  SANLD :=
endif

CC      ?= cc
V       ?= 0
# $(call quiet,TAG,target) starts a recipe line: it prints "  TAG     target" and hides the
# command, or, with V=1, prints nothing itself and lets make echo the command.
ifeq ($(V),1)
  quiet =
  Q     :=
else
  quiet = @printf '  %-7s %s\n' '$(1)' '$(2)';
  Q     := @
endif
NPROC   := $(shell nproc 2>/dev/null || echo 2)
VERSION := 0.1.0
GITREV  := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
GITFULL := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
GITSTAT := $(shell git diff --quiet HEAD -- 2>/dev/null && echo MINT || echo MODIFIED)
GITBRANCH := $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
BUILDUSER := $(shell id -un 2>/dev/null || echo unknown)
BUILDINFO := $(GITREV) $(GITFULL) $(GITSTAT) $(GITBRANCH) $(BUILDUSER)
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
           -Wno-format-nonliteral
CFLAGS  := -std=c11 -D_GNU_SOURCE -I. -I$(BUILD)/gen -g $(OPT) $(WARN) -MMD -MP -pthread \
           -DCTSDB_VERSION='"$(VERSION)"' -DCTSDB_GIT_REV='"$(GITREV)"' \
           -DCTSDB_GIT_FULL='"$(GITFULL)"' -DCTSDB_REPO_STATUS='"$(GITSTAT)"' \
           -DCTSDB_GIT_BRANCH='"$(GITBRANCH)"' -DCTSDB_BUILD_USER='"$(BUILDUSER)"' $(EXTRA_CFLAGS)
LDFLAGS := -pthread $(SANLD) $(EXTRA_LDFLAGS)
LDLIBS  := -levent -levent_pthreads -lsnappy -lcjson -lz -ledit -lpcre2-8 -lm $(EXTRA_LDLIBS)

LIB_SRCS  := $(wildcard storage/*.c storage/engine/*.c schema/*.c query/*.c tsd/*.c)
TOOL_SRCS := $(filter-out tools/main.c,$(wildcard tools/*.c))
TEST_SRCS := $(wildcard tests/unit/*/test_*.c tests/unit/*/*/test_*.c)
TESTLIB_SRCS := $(wildcard tests/lib/*.c)

-include storage/bigtable/bigtable.mk
-include web/web.mk
-include tests/fuzz/fuzz.mk

# Prometheus remote write/read (tsd/proto_prom.c): protoc-c compiles tsd/prom_remote.proto into
# $(BUILD)/gen/tsd (both files in one run; the .c waits for the .h so -j never runs it twice).
PROM_GEN_H := $(BUILD)/gen/tsd/prom_remote.pb-c.h
PROM_GEN_C := $(BUILD)/gen/tsd/prom_remote.pb-c.c
LIB_SRCS   += $(PROM_GEN_C)
LDLIBS     += -lprotobuf-c
$(PROM_GEN_H): tsd/prom_remote.proto
	@mkdir -p $(BUILD)/gen
	$(call quiet,PROTOC,$@)protoc-c --c_out=$(BUILD)/gen $<
$(PROM_GEN_C): $(PROM_GEN_H)
$(BUILD)/tsd/proto_prom.o $(BUILD)/tsd/api_prom.o $(BUILD)/tests/unit/tsd/test_proto_prom: $(PROM_GEN_H)
# generated code: its *_INIT macros trip -Wmissing-braces (our own code keeps every warning)
$(BUILD)/$(PROM_GEN_C:%.c=%.o): CFLAGS += -Wno-missing-braces -Wno-missing-prototypes \
  -Wno-missing-field-initializers

LIB_OBJS   := $(LIB_SRCS:%.c=$(BUILD)/%.o)
TOOL_OBJS  := $(TOOL_SRCS:%.c=$(BUILD)/%.o)
TESTLIB_OBJS := $(TESTLIB_SRCS:%.c=$(BUILD)/%.o)
TEST_BINS  := $(TEST_SRCS:%.c=$(BUILD)/%)
CTSDB_BIN  := $(if $(filter 1,$(SAN)),$(BUILD)/bin/ctsdb,bin/ctsdb)

# Keep intermediate objects (the test helpers) so tests are not relinked on every run.
.SECONDARY:

.PHONY: all deps deps-build deps-lint test unit unit-asan integration run bench lint fuzz stress \
        tsan clean

all: $(CTSDB_BIN) $(TEST_BINS) $(EXTRA_ALL)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call quiet,CC,$@)$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libctsdb.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(call quiet,AR,$@)rm -f $@ && ar rcs $@ $^

$(BUILD)/libctsdb_tools.a: $(TOOL_OBJS)
	@mkdir -p $(dir $@)
	$(call quiet,AR,$@)rm -f $@ && ar rcs $@ $^

# The subcommand table: one X(name) per `const struct tool_command tool_cmd_<name>`.
$(BUILD)/gen/tool_commands.inc: $(TOOL_SRCS)
	@mkdir -p $(dir $@)
	$(call quiet,GEN,$@)sed -n 's/^const struct tool_command tool_cmd_\([a-z0-9_]*\).*/X(\1)/p' $(TOOL_SRCS) \
	  | sort > $@.tmp && mv $@.tmp $@

$(BUILD)/tools/main.o: $(BUILD)/gen/tool_commands.inc

# The build information (-DCTSDB_GIT_REV, _FULL, _BRANCH, CTSDB_REPO_STATUS MINT or MODIFIED as
# OpenTSDB reports it, CTSDB_BUILD_USER) is compiled into the objects that print it. $(REV_FLAG)
# holds the last one built and is rewritten only when it differs, so those objects, and only
# they, are rebuilt after a commit, a pull or a first edit: a build never reports older data.
REV_FLAG := $(BUILD)/gen/git_rev.flag
ifeq ($(filter test deps deps-build deps-lint clean lint,$(MAKECMDGOALS)),)
REV_FLAG_SYNC := $(shell mkdir -p $(BUILD)/gen && \
  (echo '$(BUILDINFO)' | cmp -s - $(REV_FLAG) || echo '$(BUILDINFO)' > $(REV_FLAG)))
endif
$(REV_FLAG):
	@mkdir -p $(dir $@)
	$(Q)echo '$(BUILDINFO)' > $@
$(BUILD)/tsd/telnet.o $(BUILD)/tsd/api_basic.o $(BUILD)/tools/cmd_version.o \
  $(BUILD)/tools/shell_exec.o: $(REV_FLAG)

# The build time (tsd/build_info.h), one number for `ctsdb version`, /api/version and telnet
# `version`: written when any other object of the binary was recompiled (so once per build
# that changed something), SOURCE_DATE_EPOCH when set (reproducible builds), else the clock.
# Only tsd/build_info.o is compiled with it (-DCTSDB_BUILD_TIME_S).
BUILD_TIME_INC := $(BUILD)/gen/build_time.inc
$(BUILD_TIME_INC): $(filter-out $(BUILD)/tsd/build_info.o,$(LIB_OBJS)) $(TOOL_OBJS) \
                   $(BUILD)/tools/main.o
	@mkdir -p $(dir $@)
	$(call quiet,GEN,$@)echo "$${SOURCE_DATE_EPOCH:-$$(date +%s)}" > $@
$(BUILD)/tsd/build_info.o: $(BUILD_TIME_INC)
$(BUILD)/tsd/build_info.o: CFLAGS += -DCTSDB_BUILD_TIME_S="$$(cat $(BUILD_TIME_INC))"

$(CTSDB_BIN): $(BUILD)/tools/main.o $(BUILD)/libctsdb_tools.a $(BUILD)/libctsdb.a
	@mkdir -p $(dir $@)
	$(call quiet,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# tests copy error text (struct ct_err, CT_ERR_MSG_MAX bytes) into shorter diagnostic buffers
$(BUILD)/tests/%: CFLAGS += -Wno-format-truncation
$(BUILD)/tests/%: tests/%.c $(TESTLIB_OBJS) $(BUILD)/libctsdb_tools.a $(BUILD)/libctsdb.a
	@mkdir -p $(dir $@)
	$(call quiet,CCLD,$@)$(CC) $(CFLAGS) -o $@ $< $(TESTLIB_OBJS) $(BUILD)/libctsdb_tools.a $(BUILD)/libctsdb.a \
	  $(LDFLAGS) $(LDLIBS) -lcmocka

deps:
	@tools/deps.sh deps/build.txt deps/test.txt deps/test-extra.txt

deps-build:
	@tools/deps.sh deps/build.txt

deps-lint:
	@tools/deps.sh deps/lint.txt

# The whole suite: deps, build, unit tests plainly and under ASan+UBSan, integration tests.
# Always with the Bigtable backend (BIGTABLE=1), so its tests run against the emulator.
test: deps
	@$(MAKE) --no-print-directory -j$(NPROC) BIGTABLE=1 all
	@$(MAKE) --no-print-directory -j$(NPROC) BIGTABLE=1 SAN=1 all
	@tests/run_all.sh

unit: all
	@tests/run_unit.sh build/release

unit-asan:
	@$(MAKE) --no-print-directory SAN=1 all
	@tests/run_unit.sh build/asan

integration: all
	@tests/integration/run.sh

# The build's "  CC ..." lines folded into one progress line (rewritten in place on a terminal,
# a count otherwise); every other line (errors, warnings, what a tool prints) passes whole, and
# with V=1 everything does. The build's exit status is carried through the pipe on its last line.
# ./data is created by the TSD itself, mode 0700 (docs/storage.md).
BUILD_PROGRESS_AWK := \
  /^ctsdb-build-exit [0-9]+$$/ { code = $$2; next } \
  v != "1" && /^  [A-Z]+ +[^ ]+$$/ { n++; if (tty) printf "\r\033[K[%d] %s", n, $$0; next } \
  /Nothing to be done for/ { next } \
  { if (tty && n) printf "\r\033[K"; print; fflush() } \
  END { if (n) { if (tty) printf "\r\033[K"; \
                 printf "build: %d steps%s\n", n, code ? ", failed" : " done (V=1 shows the commands)" } \
        exit code }
# build-quiet: builds $(QB_GOAL) (default all) with that progress line; `make run` uses it.
QB_GOAL ?= all
.PHONY: build-quiet
build-quiet:
	@( $(MAKE) --no-print-directory -j$(NPROC) $(QB_GOAL) 2>&1; echo "ctsdb-build-exit $$?" ) \
	  | awk -v tty="$$([ -t 1 ] && echo 1)" -v v='$(V)' '$(BUILD_PROGRESS_AWK)'

run: deps-build
	@$(MAKE) --no-print-directory build-quiet QB_GOAL=all
	exec bin/ctsdb tsd --data ./data --port 4242

-include tools/bench/bench.mk

bench: deps
	@tools/deps.sh deps/bench.txt
	@$(MAKE) --no-print-directory all $(EXTRA_BENCH)
	@tools/bench/run.sh

# Long variants of the reliability tests (bounded): many more crash runs and a longer overload.
stress: all
	@CRASH_RUNS=$${CRASH_RUNS:-40} bash tests/integration/test_crash_tsd.sh
	@LOAD_SECONDS=$${LOAD_SECONDS:-120} bash tests/integration/test_overload_tsd.sh

# The engine's concurrency tests under clang's ThreadSanitizer (gcc 12's TSan runtime does not
# start on this machine kind's kernel); not part of `make test`. test_engine_maint is left out:
# its crash tests fork a multi-threaded store, which TSan does not support (it failed one run).
TSAN_TESTS := $(addprefix build/tsan/tests/unit/storage/,test_engine_concurrency \
              test_engine_memtotal test_engine_attrs)
tsan: deps
	@$(MAKE) --no-print-directory -j$(NPROC) CC=clang BUILD=build/tsan \
	  EXTRA_CFLAGS="-fsanitize=thread -O1" EXTRA_LDFLAGS="-fsanitize=thread" $(TSAN_TESTS)
	@for t in $(TSAN_TESTS); do echo "== $$t"; TSAN_OPTIONS=halt_on_error=1 $$t || exit 1; done

lint: deps-lint
	@tools/lint.sh

clean:
	rm -rf build bin

-include $(LIB_OBJS:.o=.d) $(TOOL_OBJS:.o=.d) $(BUILD)/tools/main.d $(TESTLIB_OBJS:.o=.d)
