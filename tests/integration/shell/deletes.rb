# Deletes (docs/storage-contract.md, "Deletes"): one version (explicit and latest), a family
# version, deleteall of a column, a family and a row, "deletes mask puts", a raw scan of markers.
create 'd', {NAME => 'f', VERSIONS => 5}, 'g'
put 'd', 'r', 'f:a', 'a1', 1
put 'd', 'r', 'f:a', 'a2', 2
put 'd', 'r', 'f:a', 'a3', 3
put 'd', 'r', 'f:b', 'b2', 2
put 'd', 'r', 'f:b', 'b3', 3
put 'd', 'r', 'g:x', 'x2', 2
get 'd', 'r', {VERSIONS => 5}
delete 'd', 'r', 'f:a'
get 'd', 'r', {COLUMN => 'f:a', VERSIONS => 5}
delete 'd', 'r', 'f:a', 1
get 'd', 'r', {COLUMN => 'f:a', VERSIONS => 5}
delete 'd', 'r', 'f', 2
get 'd', 'r', {VERSIONS => 5}
put 'd', 'r', 'f:a', 'late', 2
get 'd', 'r', {COLUMN => 'f:a'}
put 'd', 'r', 'f:a', 'a4', 4
deleteall 'd', 'r', 'f:b', 3
get 'd', 'r', {VERSIONS => 5}
deleteall 'd', 'r', 'g'
get 'd', 'r'
put 'd', 'r2', 'g:y', 'y'
deleteall 'd', 'r'
get 'd', 'r'
put 'd', 'r', 'f:a', 'old', 5
get 'd', 'r'
scan 'd'
delete 'd', 'nosuchrow', 'f:a'
create 'raw', 'f'
put 'raw', 'r', 'f:q', 'v1', 10
put 'raw', 'r', 'f:q', 'v2', 20
delete 'raw', 'r', 'f:q', 20
scan 'raw'
scan 'raw', {RAW => true, VERSIONS => 5}
scan 'raw', {RAW => true, VERSIONS => 5, REVERSED => true}
#@ now 1700000001000
put 'd', 'r', 'f:a', 'new'
get 'd', 'r'
deleteall 'd', 'r', '', 1700000000500
get 'd', 'r'
count 'd'
deleteall 'd', 'r2', 'g:y', 1700000000000
count 'd'
