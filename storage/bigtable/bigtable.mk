# storage/bigtable/bigtable.mk - the optional Cloud Bigtable backend, -included by the Makefile.
#
# BIGTABLE=1 builds storage/bigtable/*.c and the protobuf-c code generated from
# storage/bigtable/bigtable.proto into $(BUILD)/gen, defines CTSDB_WITH_BIGTABLE and links gRPC's
# C core and protobuf-c. Without it (the default, and `make run`) nothing here is compiled and the
# tests/unit/storage/test_bigtable_*.c programs are left out.
#
# Invariant: objects whose code depends on CTSDB_WITH_BIGTABLE (storage/wc.o, the tools) are
# rebuilt when BIGTABLE changes between two makes of the same $(BUILD): $(BT_FLAG) holds the last
# value and is rewritten only when it differs.
BIGTABLE ?= 0
# This file is read before the Makefile's first rule: keep `all` the default goal.
.DEFAULT_GOAL := all

BT_FLAG := $(BUILD)/gen/bigtable.flag
# Goals that only hand over to a sub-make (`make test` builds with BIGTABLE=1) leave the flag
# alone, so they do not force a rebuild of what the sub-make then compiles.
ifeq ($(filter test deps deps-build clean lint,$(MAKECMDGOALS)),)
BT_FLAG_SYNC := $(shell mkdir -p $(BUILD)/gen && \
  (echo '$(BIGTABLE)' | cmp -s - $(BT_FLAG) || echo '$(BIGTABLE)' > $(BT_FLAG)))
endif
$(BUILD)/storage/wc.o $(BUILD)/tools/main.o $(TOOL_SRCS:%.c=$(BUILD)/%.o): $(BT_FLAG)

ifeq ($(BIGTABLE),1)

BT_GEN_H := $(BUILD)/gen/storage/bigtable/bigtable.pb-c.h
BT_GEN_C := $(BUILD)/gen/storage/bigtable/bigtable.pb-c.c
BT_SRCS  := $(wildcard storage/bigtable/*.c)
BT_GEN_O := $(BUILD)/$(BT_GEN_C:%.c=%.o)

LIB_SRCS += $(BT_SRCS) $(BT_GEN_C)
CFLAGS   += -DCTSDB_WITH_BIGTABLE
LDLIBS   += -lgrpc -lgpr -lprotobuf-c

# protoc-c writes both files in one run; the .c waits for the .h so -j never runs it twice.
$(BT_GEN_H): storage/bigtable/bigtable.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen $<
$(BT_GEN_C): $(BT_GEN_H)

# Everything that includes the generated header waits for it.
$(BT_SRCS:%.c=$(BUILD)/%.o) $(BT_GEN_O): $(BT_GEN_H)
$(patsubst %.c,$(BUILD)/%,$(filter tests/unit/storage/test_bigtable_%.c,$(TEST_SRCS))): $(BT_GEN_H)

# Generated code only: its *_INIT macros trip -Wmissing-braces, and it has no prototypes for
# some static tables. Our own code keeps every warning.
$(BT_GEN_O): CFLAGS += -Wno-missing-braces -Wno-missing-prototypes -Wno-missing-field-initializers

else

TEST_SRCS := $(filter-out tests/unit/storage/test_bigtable_%.c,$(TEST_SRCS))

endif
