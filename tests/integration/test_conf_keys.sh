#!/usr/bin/env bash
# test_conf_keys.sh - the one table of configuration keys: docs/tsd.md and docs/schema.md hold
# exactly what `ctsdb tsd --print-config-keys` prints; every key with an owner is read by that
# owner; documented schema keys take effect in the real TSD (a TTL, compression and pre-splits
# on the tables it creates) instead of being "unknown"; the salted default and a store made
# unsalted (OpenTSDB's layout) both work, and the store keeps its layout under the default; every
# tool takes the same options (--config FILE, --data DIR, --KEY=VALUE, --set KEY=VALUE), the
# shell too.
source "$(dirname "$0")/lib.sh"
cd "$IT_ROOT" || exit 1
dir=$(it_tmpdir)
C() { "$CTSDB" "$@"; }

# ---- the docs are generated from the table -----------------------------------------------------
# doc_table FILE COMMAND: the lines between the marker naming COMMAND and the closing marker
doc_table() {
  awk -v m="<!-- config-keys: $2 -->" '$0 == m {on = 1; next} /^<!-- \/config-keys -->/ {on = 0} on' "$1"
}
gen=$(C tsd --print-config-keys)
check_eq "--print-config-keys exits 0" 0 $?
check_eq "docs/tsd.md's key table is the generated one (ctsdb tsd --print-config-keys)" \
  "$gen" "$(doc_table docs/tsd.md 'ctsdb tsd --print-config-keys')"
gens=$(C tsd --print-config-keys=schema)
check_eq "docs/schema.md's key table is the generated one (--print-config-keys=schema)" \
  "$gens" "$(doc_table docs/schema.md 'ctsdb tsd --print-config-keys=schema')"
nkeys=$(echo "$gen" | grep -c '^| `tsd\.')
nschema=$(echo "$gens" | grep -c '^| `tsd\.')
check "the table lists more than 80 keys" test "$nkeys" -gt 80
check "the schema's part lists 27 keys" test "$nschema" -eq 27
check_contains "a schema key documented with its range" "$gens" \
  '| `tsd.storage.salt.width` | integer | `1` | 0..8 | schema/tsdb.c |'

# ---- every key reaches its owner ----------------------------------------------------------------
# The owner column names the file that acts on the key: that file must read it by name (schema
# keys are walked through the schema by tests/unit/tsd/test_conf.c as well).
bad=""
checked=0
while IFS='|' read -r _ key _ _ _ owner _; do
  key=$(echo "$key" | tr -d ' `')
  owner=$(echo "$owner" | tr -d ' ')
  case "$owner" in none*) continue ;; esac
  checked=$((checked + 1))
  if [ ! -f "$owner" ] || ! grep -qF "\"$key\"" "$owner"; then bad="$bad $key($owner)"; fi
done < <(echo "$gen" | grep '^| `tsd\.')
check_eq "every key with an owner is read by that owner" "" "$bad"
check "... and that was checked for more than 60 keys" test "$checked" -gt 60

# ---- schema keys take effect in the TSD -------------------------------------------------------
data=$dir/ttl
TSD_DATA=$data tsd_start --tsd.storage.ctsdb.ttl=86400 --tsd.storage.ctsdb.compression=gz
log=$(cat "$TSD_LOG")
tsd_stop
case "$log" in
*"unknown configuration key"*) not_ok "tsd.storage.ctsdb.* keys are known to the TSD: $log" ;;
*) ok "tsd.storage.ctsdb.* keys are known to the TSD" ;;
esac
out=$(C shell --data "$data" -e "describe 'tsdb'" 2>&1)
check_contains "--tsd.storage.ctsdb.ttl=86400 gives the data family a TTL of a day" "$out" \
  "TTL => '86400 SECONDS (1 DAY)'"
check_contains "--tsd.storage.ctsdb.compression=gz reaches the table" "$out" "COMPRESSION => 'GZ'"
out=$(C create-tables --data "$data")
check_contains "the default data table is pre-split per salt bucket" "$out" "tsdb: 8 regions"
check_contains "the default layout is salted" "$out" "key layout: salt_width=1 salt_buckets=8"
err=$(C tsd --data "$data" --port 0 --tsd.storage.ctsdb.ttl=-5 2>&1)
check_contains "a bad schema value stops the TSD naming the key" "$err" \
  "bad value '-5' for tsd.storage.ctsdb.ttl"

# ---- salted default, written and read through the TSD and the tools ---------------------------
# put_and_query DATA ARGS...: writes 3 points of 2 series through telnet, reads them back
put_and_query() {
  local d=$1; shift
  TSD_DATA=$d tsd_start "$@"
  printf 'put conf.m 1356998400 1 host=a\nput conf.m 1356998410 2 host=a\nput conf.m 1356998400 5 host=b\nversion\n' |
    tsd_talk >/dev/null
  curl -s "http://127.0.0.1:$TSD_PORT/api/query?start=1356998000&end=1356999000&m=sum:conf.m"
  tsd_stop
}
salted=$dir/salted
out=$(put_and_query "$salted")
check_contains "the salted default stores and queries points" "$out" '"dps":{"1356998400":6,"1356998410":2}'
out=$(C scan --data "$salted" 1356998000 1356999000 conf.m)
check_contains "scan reads the salted store with its recorded layout" "$out" "2 rows, 3 points"
out=$(C query --data "$salted" 1356998000 1356999000 sum conf.m)
check_eq "query --data reads the salted store" "conf.m 1356998400000 6 {}
conf.m 1356998410000 2 {}" "$out"

# ---- OpenTSDB's unsalted layout, one setting away, kept under the salted default --------------
plain=$dir/plain
out=$(C create-tables --data "$plain" --tsd.storage.salt.width=0)
check_contains "--tsd.storage.salt.width=0 makes OpenTSDB's unsalted table" "$out" "tsdb: 1 region"
out=$(put_and_query "$plain") # the TSD runs with the (salted) defaults
check_contains "an unsalted store keeps working under the salted default" "$out" \
  '"dps":{"1356998400":6,"1356998410":2}'
out=$(C create-tables --data "$plain")
check_contains "the unsalted store kept its layout" "$out" "key layout: salt_width=0"
row=$(C scan --data "$plain" 1356998000 1356999000 conf.m | head -1)
check_contains "its rows carry no salt byte (metric uid first)" "$row" "[0, 0, 1, 80, "
err=$(C scan --data "$plain" --tsd.storage.salt.width=1 1356998000 conf.m 2>&1)
check_eq "a tool asked for another layout than the store's exits 1" 1 \
  "$(C scan --data "$plain" --tsd.storage.salt.width=1 1356998000 conf.m >/dev/null 2>&1; echo $?)"
check_contains "and says why, naming both layouts" "$err" \
  "created with salt_width=0 salt_buckets=8 uid widths 3/3/3, the config says salt_width=1"
TSD_DATA=$plain "$CTSDB" tsd --bind 127.0.0.1 --port 0 --data "$plain" \
  --tsd.storage.salt.width=1 >"$dir/refused.log" 2>&1
check_eq "the TSD refuses a salt setting that contradicts the store (exit 1)" 1 $?
check_contains "naming the store's layout" "$(cat "$dir/refused.log")" "created with salt_width=0"

# ---- one option style for every tool -----------------------------------------------------------
cfg=$dir/tools.conf
printf 'tsd.storage.directory = %s\n' "$salted" >"$cfg"
out=$(C uid --config "$cfg" metrics conf.m)
check_eq "uid reads --config FILE" "metrics conf.m: [0, 0, 1]" "$out"
out=$(C mkmetric --config "$cfg" --tsd.core.uid.random_metrics=false conf.n)
check_eq "mkmetric takes --config and --KEY=VALUE" "metrics conf.n: [0, 0, 2]" "$out"
out=$(C mkmetric --set tsd.storage.directory="$salted" conf.o)
check_eq "--set KEY=VALUE is an alias" "metrics conf.o: [0, 0, 3]" "$out"
out=$(C scan --config "$cfg" --import 1356998000 1356999000 conf.m host=b)
check_eq "scan takes --config" "conf.m 1356998400 5 host=b" "$out"
out=$(C fsck --config "$cfg")
check_contains "fsck takes --config" "$out" "fsck: 0 problems found"
out=$(C query --config "$cfg" 1356998000 1356999000 sum conf.m host=a)
check_contains "query takes --config (the data directory from the file)" "$out" "conf.m 1356998400000 1"
out=$(C shell --config "$cfg" -e "count 'tsdb-uid'" 2>&1)
check_contains "shell takes --config (the data directory from the file)" "$out" "row(s)"
for cmd in uid mkmetric scan fsck create-tables query shell; do
  err=$(C "$cmd" --config "$cfg" --tsd.storage.max_tags=lots x 2>&1)
  check_contains "$cmd checks --KEY=VALUE against the key table" "$err" \
    "bad value 'lots' for tsd.storage.max_tags"
  err=$(C "$cmd" --config "$dir/missing.conf" x 2>&1)
  check_contains "$cmd names a missing --config file" "$err" "missing.conf"
done
err=$(C uid --config "$cfg" --tsd.storage.salt.widht=1 metrics conf.m 2>&1)
check_contains "a tool warns about an unknown key" "$err" \
  "warning: unknown configuration key tsd.storage.salt.widht"
imp=$dir/imp.txt
echo "conf.i 1356998400 7 host=c" >"$imp"
out=$(C import --config "$cfg" --set tsd.storage.write_threads=2 "$imp" 2>/dev/null)
check_contains "import takes --config and --set" "$out" "imported 1 datapoints"

it_done
