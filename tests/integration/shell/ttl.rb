# TTL and MIN_VERSIONS with a pinned clock (docs/storage-contract.md, "What a read returns"):
# expiry is strict at now - TTL; the newest MIN_VERSIONS versions survive expiry, also through
# flush and major compaction; future timestamps never expire early.
create 'ttl', {NAME => 'f', TTL => 10, VERSIONS => 3}, {NAME => 'm', TTL => '10', VERSIONS => 3, MIN_VERSIONS => 1}
put 'ttl', 'r', 'f:q', 'old', 1699999990000
put 'ttl', 'r', 'f:q', 'older', 1699999989999
put 'ttl', 'r', 'm:q', 'm1', 1699999980000
put 'ttl', 'r', 'm:q', 'm2', 1699999985000
get 'ttl', 'r', {VERSIONS => 3}
put 'ttl', 'r2', 'f:q', 'future', 1800000000000
describe 'ttl'
#@ now 1700000000001
get 'ttl', 'r', {VERSIONS => 3}
count 'ttl'
#@ now 1800000009000
count 'ttl'
get 'ttl', 'r2'
#@ now 1800000010001
get 'ttl', 'r2'
scan 'ttl', {VERSIONS => 3}
flush 'ttl'
major_compact 'ttl'
scan 'ttl', {VERSIONS => 3}
scan 'ttl', {RAW => true, VERSIONS => 3}
put 'ttl', 'r3', 'f:q', 'fresh'
count 'ttl'
