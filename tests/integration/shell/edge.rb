# Edge cases: 0xFF row prefixes (no upper bound) both ways, a reversed start past the last row,
# LIMIT with BATCH (rows vs chunks), a family listed also as a column, the empty qualifier,
# explicit-column MIN_VERSIONS (docs/storage-contract.md, "Choices where HBase is inconsistent",
# item 1), empty and inverted ranges, binary bounds across a region boundary at \xFF.
create 'x', {NAME => 'f', VERSIONS => 5}, {NAME => 'm', TTL => 10, MIN_VERSIONS => 2, VERSIONS => 5}, SPLITS => ["\xff"]
put 'x', "\xff", 'f:a', 'ff', 1
put 'x', "\xff\xff", 'f:a', 'ffff', 1
put 'x', "\xff\xff\x00", 'f:a', 'ffff00', 1
put 'x', "\xfe\xff", 'f:a', 'feff', 1
put 'x', "\xff\x00", 'f:a', 'ff00', 1
put 'x', 'a', 'f:a', 'a1', 1
put 'x', 'a', 'f:a', 'a2', 2
put 'x', 'a', 'f:b', 'b1', 1
put 'x', 'a', 'f:', 'e', 1
put 'x', 'a', 'm:q', 'm1', 1699999900000
put 'x', 'a', 'm:q', 'm2', 1699999910000
put 'x', 'a', 'm:q', 'm3', 1699999920000
scan 'x', {ROWPREFIXFILTER => "\xff\xff"}
scan 'x', {ROWPREFIXFILTER => "\xff\xff", REVERSED => true}
scan 'x', {ROWPREFIXFILTER => "\xff", REVERSED => true}
scan 'x', {REVERSED => true, STARTROW => "\xff\xff\xff"}
scan 'x', {REVERSED => true, STARTROW => "b", LIMIT => 1}
scan 'x', {LIMIT => 1, BATCH => 1}
scan 'x', {COLUMNS => ['f', 'f:a'], STARTROW => 'a', STOPROW => 'b', VERSIONS => 5}
scan 'x', {COLUMNS => ['f:'], STARTROW => 'a', STOPROW => 'b'}
get 'x', 'a', {COLUMN => 'm:q', VERSIONS => 5}
get 'x', 'a', {COLUMN => 'm', VERSIONS => 5}
get 'x', 'a', {FILTER => "ColumnRangeFilter('b', true, 'a', true)"}
get 'x', 'a', {COLUMN => 'f:a', TIMERANGE => [2, 2]}
get 'x', 'a', {COLUMN => 'f:a', TIMERANGE => [0, 2], VERSIONS => 5}
delete 'x', 'a', 'f:a'
get 'x', 'a', {COLUMN => 'f:a', TIMERANGE => [0, 3], VERSIONS => 5}
scan 'x', {STARTROW => "\xfe", STOPROW => "\xff\x00"}
