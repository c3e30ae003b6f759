# hbase:meta, the read-only view of the catalog: one row per table (table:state) and one per
# region ("<table>,<start key>,<id>": info:regioninfo, info:server, info:state), read with every
# scan and get option; it follows creates, splits, disables and drops, and refuses changes.
create 't1', 'f', SPLITS => ['m', "\x00z"]
create_namespace 'ns'
create 'ns:t2', 'f'
list_namespace_tables 'hbase'
exists 'hbase:meta'
is_enabled 'hbase:meta'
describe 'hbase:meta'
scan 'hbase:meta'
scan 'hbase:meta', {COLUMNS => 'info:regioninfo', STARTROW => 't1', STOPROW => 't1,m'}
scan 'hbase:meta', {ROWPREFIXFILTER => 't1,', REVERSED => true, COLUMNS => ['info:state'], LIMIT => 2}
get 'hbase:meta', 't1', 'table:state'
get 'hbase:meta', 't1,m,3'
count 'hbase:meta'
get_splits 'hbase:meta'
split 't1', 'q'
disable 'ns:t2'
scan 'hbase:meta', {COLUMNS => ['info:state', 'table']}
drop 'ns:t2'
count 'hbase:meta'
list
#@ now 1700000000000
put 'hbase:meta', 'x', 'info:state', 'y'
#@ now 1700000000000
disable 'hbase:meta'
#@ now 1700000000000
create 'hbase:meta', 'f'
