#!/usr/bin/env bash
# run.sh - what `make bench` runs after building: the storage-engine benchmark (ctsdb's
# embedded engine vs LevelDB and RocksDB, db_bench conventions). Arguments are passed to
# engine_bench (e.g. `tools/bench/run.sh -n 100000`); BENCH_DIR sets where the databases go
# (default build/bench-data, on disk, removed afterwards).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${BENCH_BIN:-build/release/tools/bench/engine_bench}
if [ ! -x "$bin" ]; then
  echo "run.sh: $bin is not built (run make bench)" >&2
  exit 1
fi
dir=${BENCH_DIR:-build/bench-data}
mkdir -p "$dir"
exec "$bin" -d "$dir" "$@"
