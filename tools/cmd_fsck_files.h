/* cmd_fsck_files.h - the file pass of `ctsdb fsck` (cmd_fsck.c): checks every file of an
 * embedded store's data directory byte by byte, before the store is opened, and with
 * `--quarantine` sets damaged files aside in <data>/quarantine/ (docs/security.md, "Damaged
 * files"). */
#ifndef CT_TOOLS_CMD_FSCK_FILES_H
#define CT_TOOLS_CMD_FSCK_FILES_H

#include <stdbool.h>
#include <stddef.h>

struct fsck_files_result {
    size_t files;       /* files checked */
    size_t damaged;     /* files found damaged (each reported on stdout, naming it) */
    size_t quarantined; /* of those, set aside (quarantine mode) */
    size_t notes;       /* torn log tails (what a crash leaves; not damage) */
};

/* Checks the CATALOG (magic, version, length, checksum), every block file under sst/ (footer,
 * index, metadata and every data block's checksum: the file is opened and read through to
 * its last cell), every log segment under wal/ and head/ (header, every record's framing and
 * checksum; a torn last record of the newest segment is a note, damage followed by more data
 * is damage). Prints "fsck: damaged <path>: <reason>" per damaged file. With `quarantine`:
 * a damaged block file is moved to <dir>/quarantine/ (the store then drops it from its catalog
 * when opened with wc_options.quarantine_damaged); a damaged log segment is copied there and
 * cut at its last good record (or moved whole if its header is damaged), so the records
 * before the damage still replay; a damaged head/released mark is moved there (the head log
 * then replays whole). The catalog itself is never quarantined (it lists every
 * other file). Returns 0, or -1 when the directory cannot be read at all (message printed). */
int fsck_files_check(const char *dir, bool quarantine, struct fsck_files_result *out);

#endif
