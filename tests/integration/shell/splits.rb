# get_splits for both algorithms at several region counts (the tables of docs/storage-contract.md,
# "Split-key algorithms"), SPLITS given out of order and as binary strings, and rows written
# under binary split keys.
create 'hex2', 'f', {NUMREGIONS => 2, SPLITALGO => 'HexStringSplit'}
get_splits 'hex2'
create 'hex3', 'f', {NUMREGIONS => 3, SPLITALGO => 'HexStringSplit'}
get_splits 'hex3'
create 'hex4', 'f', {NUMREGIONS => 4, SPLITALGO => 'HexStringSplit'}
get_splits 'hex4'
create 'hex5', 'f', {NUMREGIONS => 5, SPLITALGO => 'HexStringSplit'}
get_splits 'hex5'
create 'hex9', 'f', {NUMREGIONS => 9, SPLITALGO => 'HexStringSplit'}
get_splits 'hex9'
create 'hex10', 'f', {NUMREGIONS => 10, SPLITALGO => 'HexStringSplit'}
get_splits 'hex10'
create 'hex16', 'f', {NUMREGIONS => 16, SPLITALGO => 'HexStringSplit'}
get_splits 'hex16'
create 'uni2', 'f', NUMREGIONS => '2', SPLITALGO => 'UniformSplit'
get_splits 'uni2'
create 'uni3', 'f', NUMREGIONS => '3', SPLITALGO => 'UniformSplit'
get_splits 'uni3'
create 'uni4', 'f', NUMREGIONS => '4', SPLITALGO => 'UniformSplit'
get_splits 'uni4'
create 'uni9', 'f', NUMREGIONS => '9', SPLITALGO => 'UniformSplit'
get_splits 'uni9'
create 'uni10', 'f', NUMREGIONS => '10', SPLITALGO => 'UniformSplit'
get_splits 'uni10'
create 'full', 'f', NUMREGIONS => 3, SPLITALGO => 'org.apache.hadoop.hbase.util.RegionSplitter$UniformSplit'
get_splits 'full'
create 'bin', 'f', SPLITS => ['\xAA\xAA', 'UU', '\x00\x01', 'zz'], NUMREGIONS => 4, SPLITALGO => 'HexStringSplit'
get_splits 'bin'
put 'bin', "\x00", 'f:q', 'lowest'
put 'bin', "\xaa\xaa", 'f:q', 'at a split key'
put 'bin', "\xff\xff\xff", 'f:q', 'highest'
put 'bin', 'UU', 'f:q', 'UU'
scan 'bin'
scan 'bin', {REVERSED => true, LIMIT => 2}
status 'summary'
