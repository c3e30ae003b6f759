# bench.mk - builds the storage-engine benchmark (tools/bench/engine_bench.c): ctsdb's embedded
# engine side by side with LevelDB and RocksDB (deps/bench.txt). Included by the Makefile's
# bench lines; `make bench` builds $(EXTRA_BENCH) and runs tools/bench/run.sh. Never linked
# into bin/ctsdb.
ENGINE_BENCH := $(BUILD)/tools/bench/engine_bench
EXTRA_BENCH += $(ENGINE_BENCH)

$(ENGINE_BENCH): tools/bench/engine_bench.c $(BUILD)/libctsdb.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libctsdb.a $(LDFLAGS) $(LDLIBS) -lleveldb -lrocksdb

# The query layer in-process (tools/bench/query_micro.c), for profiling; not run by `make bench`.
QUERY_MICRO := $(BUILD)/tools/bench/query_micro
EXTRA_BENCH += $(QUERY_MICRO)

$(QUERY_MICRO): tools/bench/query_micro.c $(BUILD)/libctsdb.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libctsdb.a $(LDFLAGS) $(LDLIBS)

# Prometheus remote write load (tools/bench/promrw_bench.c) for ctsdb and VictoriaMetrics'
# /api/v1/write; not run by `make bench` (tools/bench/promrw_compare.sh runs it).
PROMRW_BENCH := $(BUILD)/tools/bench/promrw_bench
EXTRA_BENCH += $(PROMRW_BENCH)

$(PROMRW_BENCH): tools/bench/promrw_bench.c $(BUILD)/libctsdb.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libctsdb.a $(LDFLAGS) $(LDLIBS)

# The engine's scans over a TSD's data table (tools/bench/scan_micro.c, run under callgrind by
# tools/bench/scan_micro_callgrind.sh); not run by `make bench`.
SCAN_MICRO := $(BUILD)/tools/bench/scan_micro
EXTRA_BENCH += $(SCAN_MICRO)

$(SCAN_MICRO): tools/bench/scan_micro.c $(BUILD)/libctsdb.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libctsdb.a $(LDFLAGS) $(LDLIBS)

# Where a head log's bytes go, and its encoder / replay on a real record stream
# (tools/bench/headlog_bytes.c); not run by `make bench`.
HEADLOG_BYTES := $(BUILD)/tools/bench/headlog_bytes
EXTRA_BENCH += $(HEADLOG_BYTES)

$(HEADLOG_BYTES): tools/bench/headlog_bytes.c $(BUILD)/libctsdb.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libctsdb.a $(LDFLAGS) $(LDLIBS)

# The /api/put body path in-process (tools/bench/jsonput_micro.c, run under callgrind by
# tools/bench/jsonput_callgrind.sh); not run by `make bench`.
JSONPUT_MICRO := $(BUILD)/tools/bench/jsonput_micro
EXTRA_BENCH += $(JSONPUT_MICRO)

$(JSONPUT_MICRO): tools/bench/jsonput_micro.c tsd/api_put.c $(BUILD)/libctsdb.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libctsdb.a $(LDFLAGS) $(LDLIBS)

# The telnet put path's parse and batch step in-process (tools/bench/telnet_micro.c, run under
# callgrind by tools/bench/telnet_callgrind.sh); not run by `make bench`.
TELNET_MICRO := $(BUILD)/tools/bench/telnet_micro
EXTRA_BENCH += $(TELNET_MICRO)

$(TELNET_MICRO): tools/bench/telnet_micro.c $(BUILD)/libctsdb.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libctsdb.a $(LDFLAGS) $(LDLIBS)

# Where the bytes of compressed hour cells go on tsd_load's value model, per metric class, and
# the cost of encoding and decoding them (tools/bench/hour_bytes.c); not run by `make bench`.
HOUR_BYTES := $(BUILD)/tools/bench/hour_bytes
EXTRA_BENCH += $(HOUR_BYTES)

$(HOUR_BYTES): tools/bench/hour_bytes.c $(BUILD)/libctsdb.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libctsdb.a $(LDFLAGS) $(LDLIBS)
