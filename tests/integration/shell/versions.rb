# Versions (docs/storage-contract.md, "What a read returns", "Deletes and versions", "Flush and
# compaction retention"): the read limit is min(requested, family VERSIONS); deleted versions do
# not use up the budget; time-range reads see versions beyond VERSIONS until a flush discards
# them.
create 'v', {NAME => 'f', VERSIONS => 2}
put 'v', 'a', 'f:q', '1', 1
put 'v', 'a', 'f:q', '2', 2
put 'v', 'a', 'f:q', '3', 3
get 'v', 'a', {COLUMN => 'f:q', VERSIONS => 5}
delete 'v', 'a', 'f:q', 3
get 'v', 'a', {COLUMN => 'f:q', VERSIONS => 2}
put 'v', 'c', 'f:q', 'c1', 1
put 'v', 'c', 'f:q', 'c2', 2
put 'v', 'c', 'f:q', 'c3', 3
get 'v', 'c', {COLUMN => 'f:q', TIMERANGE => [0, 2]}
put 'v', 'c', 'f:q', 'c3-again', 3
get 'v', 'c', {COLUMN => 'f:q', VERSIONS => 2}
put 'v', 'b', 'f:q', '1', 1
put 'v', 'b', 'f:q', '2', 2
put 'v', 'b', 'f:q', '3', 3
flush 'v'
get 'v', 'c', {COLUMN => 'f:q', TIMERANGE => [0, 2]}
delete 'v', 'b', 'f:q', 3
get 'v', 'b', {COLUMN => 'f:q', VERSIONS => 2}
get 'v', 'a', {COLUMN => 'f:q', VERSIONS => 2}
compact 'v'
major_compact 'v', 'f'
scan 'v', {VERSIONS => 2}
scan 'v', {RAW => true, VERSIONS => 5}
