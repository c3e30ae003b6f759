# Pre-split tables (docs/storage-contract.md, "Gets and scans", "Regions and pre-splitting"):
# SPLITS keys are binary-decoded even in single quotes; scans in both directions, with bounds,
# prefixes, limits and batches, cross region boundaries exactly as on an unsplit table; split
# adds a boundary without changing results.
create 'rt', 'f', SPLITS => ['d', 'b', 'f\x00']
get_splits 'rt'
put 'rt', 'a', 'f:q', 'A', 1
put 'rt', 'b', 'f:q', 'B', 1
put 'rt', 'c', 'f:q', 'C', 1
put 'rt', 'd', 'f:q', 'D', 1
put 'rt', 'd', 'f:r', 'D2', 1
put 'rt', 'd', 'f:s', 'D3', 1
put 'rt', 'e', 'f:q', 'E', 1
put 'rt', 'f', 'f:q', 'F', 1
put 'rt', "f\x00", 'f:q', 'F0', 1
put 'rt', 'g', 'f:q', 'G', 1
scan 'rt'
scan 'rt', {REVERSED => true}
scan 'rt', {STARTROW => 'c', STOPROW => 'f'}
scan 'rt', {STARTROW => 'b', STOPROW => "f\x00"}
scan 'rt', {REVERSED => true, STARTROW => 'e', STOPROW => 'b'}
scan 'rt', {REVERSED => true, STARTROW => 'bb'}
scan 'rt', {REVERSED => true, STARTROW => 'b', STOPROW => 'e'}
scan 'rt', {STARTROW => 'c', STOPROW => 'c'}
scan 'rt', {LIMIT => 3}
scan 'rt', {LIMIT => 3, REVERSED => true}
scan 'rt', {ROWPREFIXFILTER => 'f'}
scan 'rt', {ROWPREFIXFILTER => 'f', REVERSED => true}
scan 'rt', {ROWPREFIXFILTER => 'f', STARTROW => "f\x00"}
scan 'rt', {BATCH => 2, STARTROW => 'c', STOPROW => 'e'}
scan 'rt', {BATCH => 2, REVERSED => true, STARTROW => 'd', STOPROW => 'c'}
count 'rt'
get 'rt', "f\x00"
get 'rt', 'd', 'f:r'
split 'rt', 'c'
get_splits 'rt'
scan 'rt', {STARTROW => 'b', STOPROW => 'e'}
scan 'rt', {REVERSED => true, STARTROW => 'd', LIMIT => 3}
status
status 'summary'
flush 'rt'
scan 'rt', {REVERSED => true, STOPROW => 'e'}
count 'rt'
