# fuzz.mk - libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined), included by the
# Makefile. Each tests/fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput and has a seed corpus in
# tests/fuzz/corpus/<name>/ and regression inputs (crashes found earlier) in
# tests/fuzz/regressions/<name>/.
#   make fuzz              every target for FUZZ_SECONDS (default 60) each
#   make fuzz-short        every target for 5 s on its corpus, plus its regressions (make test)
# The library is rebuilt with clang into build/fuzz so the fuzzer sees coverage of our code.

FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=build/fuzz/bin/%)
FUZZ_SECONDS ?= 60
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

.PHONY: fuzz fuzz-build fuzz-short

fuzz-build:
	@$(MAKE) --no-print-directory -j$(NPROC) CC=clang BUILD=build/fuzz SAN=0 \
	  EXTRA_CFLAGS="-fsanitize=fuzzer-no-link $(FUZZ_SAN) -Wno-string-concatenation" \
	  build/fuzz/libctsdb.a build/fuzz/libctsdb_tools.a $(FUZZ_BINS)

build/fuzz/bin/%: tests/fuzz/%.c build/fuzz/libctsdb.a build/fuzz/libctsdb_tools.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< build/fuzz/libctsdb_tools.a build/fuzz/libctsdb.a \
	  $(LDFLAGS) -fsanitize=fuzzer $(FUZZ_SAN) $(LDLIBS)

fuzz: deps
	@$(MAKE) --no-print-directory fuzz-build
	@tests/fuzz/run.sh $(FUZZ_SECONDS)

fuzz-short:
	@$(MAKE) --no-print-directory fuzz-build
	@tests/fuzz/run.sh 5
