/* bt_meta_format.h - the Bigtable backend's metadata table: what Bigtable itself cannot hold
 * (namespaces, enabled/disabled, the wide-column attributes Bigtable has no use for, split keys).
 * Written by bigtable.c; shared by every ctsdb process using the same instance.
 *
 * Table id "hbase.ctsdb_meta" (ctsdb name hbase:ctsdb_meta, hidden from lists), one family "m"
 * (GC: max_versions(1)). Rows, all values UTF-8 JSON objects with "v": BT_META_VERSION:
 *
 *   row "ns:<name>"     column m:"ns"     {"v":1, "config":[["k","v"], ...]}
 *                                          one per user namespace; "config" (optional) holds
 *                                          its configuration pairs in creation order
 *   row "t:<ns:qual>"   column m:"desc"   {"v":1, "enabled":true, "durability":0,
 *                                          "readonly":false, "compaction":true,
 *                                          "max_filesize":0, "memstore_flushsize":0,
 *                                          "families":[{"name":"f", "versions":1,
 *                                            "min_versions":0, "ttl":2147483647,
 *                                            "keep_deleted":0, "bloom":1, "blocksize":65536,
 *                                            "blockcache":true, "in_memory":false,
 *                                            "compression":0, "encoding":0}, ...],
 *                                          "splits":["<hex>", ...]}
 *
 * Enumerations are the wc.h codes (never renumbered). Readers reject a "v" above
 * BT_META_VERSION and take missing fields as their defaults. Namespaces `default` and `hbase`
 * always exist and have no row. A table that exists in Bigtable without a "t:" row (made by
 * another tool) is described from its GC rules and counts as enabled. */
#ifndef CT_BT_META_FORMAT_H
#define CT_BT_META_FORMAT_H

#define BT_META_VERSION      1
#define BT_META_TABLE        "hbase:ctsdb_meta"
#define BT_META_FAMILY       "m"
#define BT_META_NS_PREFIX    "ns:"
#define BT_META_TABLE_PREFIX "t:"
#define BT_META_NS_COLUMN    "ns"
#define BT_META_DESC_COLUMN  "desc"

#endif
