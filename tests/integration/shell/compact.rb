# compact / major_compact of one family (docs/storage-contract.md, "Flush and compaction
# retention"): only that family's files are rewritten. A major compaction drops the markers and
# what they mask; a minor one (fewer files than the three a selection needs) changes nothing; the
# other family keeps its marker until its own turn.
create 'cf', 'f', 'g'
put 'cf', 'r', 'f:q', 'f1', 10
put 'cf', 'r', 'g:q', 'g1', 10
flush 'cf'
deleteall 'cf', 'r', 'f:q', 20
deleteall 'cf', 'r', 'g:q', 20
flush 'cf'
compact 'cf', 'f'
scan 'cf', {RAW => true, VERSIONS => 5}
major_compact 'cf', 'f'
scan 'cf', {RAW => true, VERSIONS => 5}
put 'cf', 'r', 'f:q', 'f2', 15
put 'cf', 'r', 'g:q', 'g2', 15
get 'cf', 'r'
major_compact 'cf', 'g'
scan 'cf', {RAW => true, VERSIONS => 5}
put 'cf', 'r', 'g:q', 'g3', 15
get 'cf', 'r'
major_compact 'cf', 'nope'
