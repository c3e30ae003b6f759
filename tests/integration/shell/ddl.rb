# DDL: create (the HBase schema-design guide examples verbatim), describe, list, exists,
# enable/disable, alter in every form, drop, truncate, namespaces.
create 'test', { NAME => 'info', COMPRESSION => 'snappy' }, {NUMREGIONS => 9, SPLITALGO => 'HexStringSplit'}
create 'mytable', { NAME => 'colfam1', VERSIONS => 5, MIN_VERSIONS => '1', TTL => '18000' }
describe 'test'
desc 'mytable'
list
exists 'test'
exists 'nope'
is_enabled 'test'
is_disabled 'test'
disable 'test'
disable 'test'
is_enabled 'test'
is_disabled 'test'
describe 'test'
enable 'test'
is_enabled 'test'
create 't2', 'a', 'b', {NAME => 'c', VERSIONS => 3, BLOOMFILTER => 'rowcol', IN_MEMORY => true,
  BLOCKCACHE => 'false', BLOCKSIZE => '4096', DATA_BLOCK_ENCODING => 'FAST_DIFF',
  KEEP_DELETED_CELLS => true, TTL => 86400, COMPRESSION => 'GZ'},
  MAX_FILESIZE => 1073741824, DURABILITY => 'ASYNC_WAL'
describe 't2'
alter 't2', {NAME => 'a', VERSIONS => 4}, 'd', 'delete' => 'b'
describe 't2'
alter 't2', NAME => 'c', METHOD => 'delete'
alter 't2', READONLY => true, COMPACTION_ENABLED => false, MEMSTORE_FLUSHSIZE => '134217728'
describe 't2'
alter 't2', METHOD => 'table_att_unset', NAME => 'MAX_FILESIZE'
alter 't2', {NAME => 'a', TTL => 'FOREVER', MIN_VERSIONS => 2, BLOOMFILTER => 'NONE'}
describe 't2'
create 't3', 'f', {NAME => 'f', VERSIONS => 2}
describe 't3'
list 't.*'
create_namespace 'ns1'
create 'ns1:t', 'f'
list
list_namespace
list_namespace 'n.*'
list_namespace_tables 'ns1'
list_namespace_tables 'default'
describe_namespace 'ns1'
describe 'ns1:t'
exists 'ns1:t'
disable 'ns1:t'
drop 'ns1:t'
drop_namespace 'ns1'
list_namespace
disable 't3'
drop 't3'
exists 't3'
list
