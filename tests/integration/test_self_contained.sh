#!/usr/bin/env bash
# test_self_contained.sh - the repository stands on its own: no tracked file (git ls-files) reads
# or cites a document outside it. Rejected: paths into the reference folder that sits beside the
# checkout (the parent directory's or /work's folder of that name, its spec/, STYLE and DESIGN
# files), the old spec files by name, and citations of their numbered sections (the word spec
# or STYLE, or a .md name, followed by a section sign). A fact belongs in docs/ and is cited by
# page and heading, e.g. (docs/storage-contract.md, "Cell order"). The patterns and the samples
# below are assembled at run time, so not even this script spells them. First the check itself
# is shown to catch each pattern on a scratch repository (and to ignore untracked files), then it
# is run on this tree.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
self=tests/integration/test_self_contained.sh

# outside_refs DIR: prints file:line:text of every tracked file of the git tree DIR that cites or
# reads outside the repository (nothing when clean).
sh=shar
sh=${sh}ed                # the reference folder's name
sec=$(printf '\302\247') # the section sign
outside_refs() {
  git -C "$1" grep -nIE \
    -e "\\.\\./$sh" -e "/work/$sh" -e "$sh/(spec/|STYLE|DESIGN)" \
    -e 'spec/(wide-column|opentsdb-compat|bigtable)\.md' \
    -e "spec $sec" -e "STYLE $sec" -e "\\.md $sec[0-9]" \
    -- . ":(exclude)$self" 2>/dev/null
}

scratch=$(it_tmpdir)
git -C "$scratch" init -q
mkdir -p "$scratch/storage" "$scratch/tests/integration" "$scratch/docs"
printf '/* cells in (docs/storage-contract.md, "Cell order") */\n' >"$scratch/storage/ok.c"
printf '# see docs/opentsdb-compat.md, "General rules"\n' >"$scratch/docs/ok.md"
printf 'spec \302\2474 here\n' >"$scratch/$self" # the script itself is exempt
git -C "$scratch" add -A
check_eq "a clean tree has no outside reference" "" "$(outside_refs "$scratch")"

# each pattern, alone in a tracked file, is reported with its file and line
n=0
for text in "order of spec ${sec}2" "STYLE ${sec}5: globals" "sed ../$sh/spec/x.md" \
  "cat /work/$sh/DESIGN.md" "as in $sh/spec/wide-column.md" 'see spec/bigtable.md' \
  "opentsdb-compat.md ${sec}1.3 rule 9"; do
  n=$((n + 1))
  printf 'line one\n%s\n' "$text" >"$scratch/storage/bad$n.h"
  git -C "$scratch" add "storage/bad$n.h"
  check_eq "caught: $text" "storage/bad$n.h:2:$text" "$(outside_refs "$scratch")"
  git -C "$scratch" rm -q -f "storage/bad$n.h"
done

# an untracked file is not part of the repository
printf 'spec \302\2471\n' >"$scratch/storage/untracked.c"
check_eq "untracked files are not checked" "" "$(outside_refs "$scratch")"

# this tree
hits=$(outside_refs "$root")
check_eq "no tracked file cites or reads outside the repository" "" "$hits"
it_done
