#!/usr/bin/env bash
# test_readme.sh - every command block of README.md, pasted as written, works against a TSD.
#
# The convention it checks (stated in README.md, "About the examples"):
#   ```sh    a block a POSIX sh runs (it is run with dash, Debian's /bin/sh, when present)
#   ```bash  a block that needs bash (run with bash)
#   any other fence (```text, ```conf, none) is not a command block and is not run.
#   A line `<!-- test_readme: skip REASON -->` right before a fence marks a command block this test
#   cannot run (`make run` starts the daemon this test starts itself; `make test` runs the whole
#   suite); each skip is printed with its reason, so what is left out is visible.
# Each run block gets a TSD of its own making: the one started here on 127.0.0.1 port 0, with the
# README's port 4242 (in localhost:4242, 127.0.0.1:4242 and bash's /dev/tcp/127.0.0.1/4242)
# replaced by the test TSD's port and `bin/ctsdb` by the binary under test ($CTSDB). The blocks
# run in README order in one data directory, each with `set -e` so that any failing command fails
# it; an answer carrying OpenTSDB's error object fails it too. Then the quick start's query must
# answer the two points the quick start's puts wrote (host web01 42.5 by telnet, web02 7 by HTTP).
# The README's other examples (query/last, suggest, a POST query, `ctsdb query`) must answer about
# those points too.
source "$(dirname "$0")/lib.sh"

README=$IT_ROOT/README.md
SH=$(command -v dash || echo sh)
CTSDB=$(readlink -f "$CTSDB")

tsd_start
dir=$(it_tmpdir)

# Split README.md into dir/block_N.{sh,bash} (or .skip with the reason) and dir/block_N.line.
python3 - "$README" "$dir" <<'EOF'
import re, sys
readme, out = sys.argv[1], sys.argv[2]
lines = open(readme, encoding="utf-8").read().split("\n")
n = 0
i = 0
skip = None
while i < len(lines):
    line = lines[i]
    m = re.match(r"^<!-- test_readme: skip (.*) -->\s*$", line)
    if m:
        skip = m.group(1)
        i += 1
        continue
    f = re.match(r"^```\s*([A-Za-z0-9_-]*)\s*$", line)
    if not f:
        if line.strip():
            skip = None
        i += 1
        continue
    lang, start = f.group(1), i + 1
    j = i + 1
    while j < len(lines) and not lines[j].startswith("```"):
        j += 1
    body = "\n".join(lines[i + 1:j]) + "\n"
    if lang in ("sh", "bash"):
        n += 1
        base = "%s/block_%02d" % (out, n)
        open(base + ".line", "w").write(str(start))
        if skip is not None:
            open(base + ".skip", "w").write(skip)
        else:
            open(base + "." + lang, "w").write(body)
    skip = None
    i = j + 1
EOF

nblocks=$(ls "$dir"/block_*.line 2>/dev/null | wc -l)
check "README has command blocks (found $nblocks)" test "$nblocks" -ge 3

run_block() { # FILE SHELL: runs the block with the port and binary substituted, output to FILE.out
  local f=$1 shell=$2
  sed -e "s#localhost:4242#127.0.0.1:$TSD_PORT#g" -e "s#127\.0\.0\.1:4242#127.0.0.1:$TSD_PORT#g" \
    -e "s#/dev/tcp/127\.0\.0\.1/4242#/dev/tcp/127.0.0.1/$TSD_PORT#g" \
    -e "s#\(^\|[ (]\)bin/ctsdb #\1$CTSDB #g" "$f" >"$f.run"
  # the port substitution must have happened wherever the README names the port
  if grep -q 4242 "$f.run"; then
    echo "port 4242 left in a block the test cannot redirect:" >&2
    grep -n 4242 "$f.run" >&2
    return 1
  fi
  (cd "$IT_ROOT" && timeout 30 "$shell" -e "$f.run" </dev/null >"$f.out" 2>&1)
}

ran=0
for l in "$dir"/block_*.line; do
  b=${l%.line}
  at="README block at line $(cat "$l")"
  if [ -f "$b.skip" ]; then
    echo "# skipped: $at: $(cat "$b.skip")"
    continue
  fi
  if [ -f "$b.sh" ]; then f=$b.sh; shell=$SH; else f=$b.bash; shell=bash; fi
  if run_block "$f" "$shell"; then
    if grep -q '"error":{' "$f.out"; then
      not_ok "$at ($(basename "$shell")): an answer is an error: $(head -c 400 "$f.out")"
    else
      ok "$at runs with $(basename "$shell")"
    fi
  else
    not_ok "$at ($(basename "$shell")) failed: $(head -c 600 "$f.out")"
  fi
  ran=$((ran + 1))
done
check "at least three README blocks were run ($ran)" test "$ran" -ge 3

# The quick start's query: the first block that queries /api/query with m= names both hosts.
qblock=$(grep -l "api/query?start=" "$dir"/block_*.sh "$dir"/block_*.bash 2>/dev/null | head -1)
if [ -z "$qblock" ]; then
  not_ok "README has a GET /api/query example"
else
  # a telnet put is silent and `exit` does not wait for it to be logged (a reply would): the
  # block's query line alone is run again, at most 20 times 0.25 s apart, until the point shows
  qline=$(grep 'api/query?start=' "$qblock.run" | head -1)
  for _ in $(seq 1 20); do
    ans=$(sed -n '/"metric"/p' "$qblock.out" | head -1)
    got=$(python3 -c '
import json, sys
for line in sys.stdin:
    line = line.strip()
    if line.startswith("["):
        r = json.loads(line)
        print(" ".join(sorted("%s=%s" % (g["tags"].get("host"), ",".join(repr(v) for v in g["dps"].values())) for g in r)))
        break
' <<<"$ans")
    [ "$got" = "web01=42.5 web02=7.0" ] && break
    sleep 0.25
    (cd "$IT_ROOT" && timeout 20 "$SH" -c "$qline" >"$qblock.out" 2>&1) || break
  done
  check_eq "the quick start's query answers both quick-start puts" "web01=42.5 web02=7.0" "$got"
fi

# The other examples answer about the same points (each command's own output, in one file per block).
more=$(grep -l "api/query/last" "$dir"/block_*.sh "$dir"/block_*.bash 2>/dev/null | head -1)
if [ -n "$more" ]; then
  out=$(cat "$more.out")
  check_contains "the README's /api/query/last example finds the quick-start series" "$out" '"metric":"sys.cpu.user"'
  check_contains "the README's /api/suggest example lists the metric" "$out" '["sys.cpu.user"'
  check "the README's ctsdb query example prints web01's point" grep -Eq 'sys\.cpu\.user [0-9]+ 42\.5' "$more.out"
  check_contains "the README's POST /api/query example answers the max" "$out" '"aggregateTags":["host"]'
fi

tsd_stop
check "the TSD stops cleanly" test $? -eq 0
it_done
