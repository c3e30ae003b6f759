# Data: put, get and scan with every option in both directions, binary keys and values,
# versions, time ranges, filters, BATCH, count, incr/get_counter, truncate.
create 't', {NAME => 'f', VERSIONS => 3}, 'g'
put 't', 'r1', 'f:a', 'v1', 100
put 't', 'r1', 'f:a', 'v2', 200
put 't', 'r1', 'f:a', 'v3', 300
put 't', 'r1', 'f:a', 'v4', 400
put 't', 'r1', 'f:b', 'b1', 150
put 't', 'r1', 'g:x', 'gx'
put 't', 'r2', 'f:', 'empty qualifier', 50
put 't', "r\x003", 'f:bin', "\x00\xff\\ok", 10
put 't', 'r2', 'g', 'family only', 60
get 't', 'r1'
get 't', 'r1', {COLUMN => 'f:a', VERSIONS => 5}
get 't', 'r1', {COLUMN => 'f:a', TIMERANGE => [0, 300], VERSIONS => 1}
get 't', 'r1', {COLUMN => 'f:a', TIMESTAMP => 100}
get 't', 'r1', 'f:a', 'g'
get 't', 'r1', ['f:b', 'g:x']
get 't', 'r1', {VERSIONS => 2}
get 't', 'r2'
get 't', "r\x003"
get 't', 'nope'
get 't', 'r1', {FILTER => "ColumnPrefixFilter('a')"}
get 't', 'r1', {FILTER => "ColumnRangeFilter('b', true, 'x', false)"}
get 't', 'r1', {FILTER => "PrefixFilter('r2')"}
scan 't'
scan 't', {COLUMNS => ['f:a'], VERSIONS => 2}
scan 't', {COLUMNS => 'g'}
scan 't', {STARTROW => 'r1', STOPROW => 'r2'}
scan 't', {STARTROW => 'r1', STOPROW => 'r1'}
scan 't', {REVERSED => true}
scan 't', {REVERSED => true, STARTROW => 'r1'}
scan 't', {REVERSED => true, STARTROW => 'r1', STOPROW => "r\x003"}
scan 't', {REVERSED => true, STARTROW => 'r1', STOPROW => 'r2'}
scan 't', {ROWPREFIXFILTER => 'r'}
scan 't', {ROWPREFIXFILTER => 'r2', REVERSED => true}
scan 't', {LIMIT => 2}
scan 't', {LIMIT => 1, REVERSED => true}
scan 't', {TIMERANGE => [100, 300]}
scan 't', {TIMESTAMP => 50}
scan 't', {BATCH => 2}
scan 't', {BATCH => 2, REVERSED => true, CACHE => 10}
scan 't', {FILTER => "PrefixFilter('r1') AND ColumnPrefixFilter('a')"}
scan 't', {FILTER => "ColumnRangeFilter('', true, 'b', true)"}
scan 't', {FILTER => "ColumnRangeFilter('a', false, 'b', true)", REVERSED => true}
scan 't', {FILTER => "PrefixFilter('r1')", ROWPREFIXFILTER => 'r2'}
scan 't', {COLUMNS => ['g'], REVERSED => true}
scan 't', {TIMERANGE => [100, 300], REVERSED => true, VERSIONS => 2}
scan 't', {TIMESTAMP => 50, REVERSED => true}
scan 't', {FILTER => "PrefixFilter('r')", REVERSED => true, LIMIT => 2}
scan 't', {COLUMNS => 'f:b', STARTROW => 'r1', STOPROW => 'r0', RAW => true, REVERSED => true}
count 't'
count 't', INTERVAL => 1
incr 't', 'c1', 'f:n'
incr 't', 'c1', 'f:n', 41
incr 't', 'c1', 'f:n', -2
get_counter 't', 'c1', 'f:n'
get_counter 't', 'c1', 'f:none'
get 't', 'c1'
count 't', {INTERVAL => 2, CACHE => 5}
put 't', 7, 'f:int', 42
get 't', '7'
truncate 't'
count 't'
scan 't'
describe 't'
