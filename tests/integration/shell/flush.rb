# Reads over a mix of memstore and flushed files, in both directions and across a region
# boundary; deletes whose markers and puts live in different places; "deletes mask puts" until a
# major compaction removes the marker; alter of VERSIONS taking effect at rewrite; a removed
# family's data going with it; truncate_preserve; KEEP_DELETED_CELLS TRUE (storage contract).
create 'fm', {NAME => 'f', VERSIONS => 3}, 'g', SPLITS => ['m']
put 'fm', 'a', 'f:q', 'a1', 10
put 'fm', 'a', 'f:q', 'a2', 20
put 'fm', 'n', 'f:q', 'n1', 10
put 'fm', 'z', 'f:q', 'z1', 10
flush 'fm'
put 'fm', 'a', 'f:q', 'a3', 30
put 'fm', 'b', 'f:q', 'b1', 10
delete 'fm', 'n', 'f:q'
get 'fm', 'n'
scan 'fm', {VERSIONS => 3}
scan 'fm', {VERSIONS => 3, REVERSED => true}
scan 'fm', {VERSIONS => 3, REVERSED => true, BATCH => 2}
put 'fm', 'n', 'f:q', 'n-again', 10
get 'fm', 'n'
flush 'fm'
get 'fm', 'n'
# the flush dropped n-again (masked) and kept the marker; n1 is in the older file
scan 'fm', {RAW => true, VERSIONS => 3, STARTROW => 'm'}
major_compact 'fm'
get 'fm', 'n'
scan 'fm', {RAW => true, VERSIONS => 3, STARTROW => 'm'}
put 'fm', 'n', 'f:q', 'n-after-major', 10
get 'fm', 'n'
alter 'fm', NAME => 'f', VERSIONS => 1
get 'fm', 'a', {VERSIONS => 3}
get 'fm', 'a', {TIMERANGE => [0, 25]}
major_compact 'fm', 'f'
get 'fm', 'a', {TIMERANGE => [0, 25]}
put 'fm', 'a', 'g:x', 'gx', 5
get 'fm', 'a'
alter 'fm', 'delete' => 'g'
alter 'fm', 'g'
get 'fm', 'a'
truncate_preserve 'fm'
get_splits 'fm'
count 'fm'
create 'kd', {NAME => 'f', VERSIONS => 3, KEEP_DELETED_CELLS => true}
put 'kd', 'r', 'f:q', 'v1', 10
put 'kd', 'r', 'f:q', 'v2', 20
deleteall 'kd', 'r', 'f:q', 30
get 'kd', 'r'
get 'kd', 'r', {TIMERANGE => [0, 30], VERSIONS => 3}
flush 'kd'
major_compact 'kd'
get 'kd', 'r', {TIMERANGE => [0, 30], VERSIONS => 3}
get 'kd', 'r'
