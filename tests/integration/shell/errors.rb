# Errors (docs/shell.md, "Errors"): each failing command runs in its own phase (a script stops
# at its first error with exit status 1 and `ERROR: <message>` on stderr); the last phase shows
# that no failed command changed anything.
create 'e', {NAME => 'f', VERSIONS => 2}
put 'e', 'r', 'f:q', 'v', 5
#@ now 1700000000000
describe 'nosuch'
#@ now 1700000000000
put 'nosuch', 'r', 'f:q', 'v'
#@ now 1700000000000
put 'e', 'r', 'x:q', 'w'
#@ now 1700000000000
get 'e', 'r', 'x'
#@ now 1700000000000
scan 'e', {COLUMNS => ['f', 'zz:q']}
#@ now 1700000000000
deleteall 'e', 'r', 'x'
#@ now 1700000000000
create 'e', 'f'
#@ now 1700000000000
create 'e2', {NAME => 'f', VERSIONS => 1, MIN_VERSIONS => 2}
#@ now 1700000000000
create 'e2', {NAME => 'f', BLOCKSIZE => 512}
#@ now 1700000000000
create 'e2', {NAME => 'f', BLOCKSIZE => 16777217}
#@ now 1700000000000
create 'e2', {NAME => 'f', TTL => 0}
#@ now 1700000000000
create 'e2', {NAME => 'f', BLOOMFILTER => 'BOGUS'}
#@ now 1700000000000
create 'e2', {NAME => 'f', COMPRESSION => 'LZMA9'}
#@ now 1700000000000
create 'e2', 'f', SPLITS => ['a', 'b', 'a']
#@ now 1700000000000
create 'e2', 'f', SPLITS => ['a', '']
#@ now 1700000000000
create 'e2', 'f', NUMREGIONS => 4
#@ now 1700000000000
create 'e2', 'f', NUMREGIONS => 1, SPLITALGO => 'UniformSplit'
#@ now 1700000000000
create 'e2'
#@ now 1700000000000
drop 'e'
#@ now 1700000000000
alter 'e', 'delete' => 'f'
#@ now 1700000000000
alter 'e', {NAME => 'f', MIN_VERSIONS => 5}
#@ now 1700000000000
alter 'e', {NAME => 'g'}, {NAME => 'f', VERSIONS => 0}
#@ now 1700000000000
alter 'e', NAME => 'nofam', METHOD => 'delete'
#@ now 1700000000000
create_namespace 'nsx'
create 'nsx:t', 'f'
drop_namespace 'nsx'
#@ now 1700000000000
create_namespace 'nsx'
#@ now 1700000000000
drop_namespace 'default'
#@ now 1700000000000
drop_namespace 'nope'
#@ now 1700000000000
create 'nope:t', 'f'
#@ now 1700000000000
create 'hbase:t', 'f'
#@ now 1700000000000
disable 'e'
put 'e', 'r', 'f:q', 'w'
#@ now 1700000000000
scan 'e'
#@ now 1700000000000
enable 'e'
get_counter 'e', 'r', 'f:q'
#@ now 1700000000000
incr 'e', 'r', 'f:q'
#@ now 1700000000000
put 'e', 'r', 'f:q', 'v', 9223372036854775807
#@ now 1700000000000
split 'e', 'r'
split 'e', 'r'
#@ now 1700000000000
create 'x', (1..9).map{|i| i}
#@ now 1700000000000
put 'e', 'r2', 'f:q', 'before the error'
put 'e', 'r2', 'f:q' 'missing comma'
#@ now 1700000000000
list
list_namespace
describe 'e'
get 'e', 'r', {VERSIONS => 5}
get_splits 'e'
count 'e'
