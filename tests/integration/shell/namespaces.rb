# Namespaces with configuration pairs (create_namespace 'ns', {'k' => 'v'}), kept across a
# restart of the shell (the catalog persists them), and a table inside such a namespace.
create_namespace 'quota_ns', {'hbase.namespace.quota.maxtables' => '5', 'owner' => 'ops', 'max' => 7}
describe_namespace 'quota_ns'
create_namespace 'plain_ns'
describe_namespace 'plain_ns'
create 'quota_ns:t1', 'f'
list_namespace_tables 'quota_ns'
#@ now 1700000100000
describe_namespace 'quota_ns'
list_namespace
drop 'quota_ns:t1'
#@ now 1700000200000
disable 'quota_ns:t1'
drop 'quota_ns:t1'
drop_namespace 'quota_ns'
list_namespace
#@ now 1700000300000
create_namespace 'bad_ns', {'k' => ['not', 'a', 'string']}
#@ now 1700000400000
list_namespace
