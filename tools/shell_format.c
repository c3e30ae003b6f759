/* shell_format.c - how the shell shows bytes, TTLs and descriptors (docs/shell.md, "Output").
 *
 * Invariants: (1) the binary-string form is reversible through shell_binary_decode() for every
 * byte string (a '\' is always written as \x5C, so "\x" in output never comes from the data);
 * (2) describe's family line always lists every attribute, in the fixed order of docs/shell.md,
 * "`describe`". */
#include <inttypes.h>
#include <string.h>

#include "storage/coding.h"
#include "tools/shell.h"

void shell_fput_binary(FILE *f, const uint8_t *p, size_t n)
{
    static const char hexd[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c >= 0x20 && c <= 0x7e && c != '\\') {
            putc(c, f);
        } else {
            putc('\\', f);
            putc('x', f);
            putc(hexd[c >> 4], f);
            putc(hexd[c & 15], f);
        }
    }
}

size_t shell_binary_decode(const char *s, size_t n, uint8_t *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 3 < n && s[i + 1] == 'x') {
            int h1 = coding_hex_digit(s[i + 2]);
            int h2 = coding_hex_digit(s[i + 3]);
            if (h1 >= 0 && h2 >= 0) {
                out[o++] = (uint8_t)(h1 * 16 + h2);
                i += 3;
                continue;
            }
        }
        out[o++] = (uint8_t)s[i];
    }
    return o;
}

/* Appends "<v> <unit>[S]" at out[at]; returns the new length (never past cap - 1). */
static size_t format_append(char *out, size_t cap, size_t at, int64_t v, const char *unit)
{
    if (at >= cap)
        return at;
    int k = snprintf(out + at, cap - at, "%" PRId64 " %s%s", v, unit, v == 1 ? "" : "S");
    if (k < 0)
        return at;
    return at + (size_t)k < cap ? at + (size_t)k : cap - 1;
}

void shell_format_ttl(int64_t ttl_s, char *out, size_t cap)
{
    if (cap == 0)
        return;
    if (ttl_s >= WC_TTL_FOREVER) {
        snprintf(out, cap, "FOREVER");
        return;
    }
    if (ttl_s < 60) {
        snprintf(out, cap, "%" PRId64 " SECOND%s", ttl_s, ttl_s == 1 ? "" : "S");
        return;
    }
    int64_t d = ttl_s / 86400, h = ttl_s % 86400 / 3600, m = ttl_s % 3600 / 60, s = ttl_s % 60;
    size_t at = 0;
    int k = snprintf(out, cap, "%" PRId64 " SECONDS (", ttl_s);
    at = k < 0 ? 0 : (size_t)k;
    const char *sep = "";
    int64_t parts[4] = {d, h, m, s};
    const char *units[4] = {"DAY", "HOUR", "MINUTE", "SECOND"};
    for (int i = 0; i < 4; i++) {
        if (!parts[i])
            continue;
        if (at < cap && *sep) {
            int w = snprintf(out + at, cap - at, "%s", sep);
            at += w < 0 ? 0 : (size_t)w;
        }
        at = format_append(out, cap, at, parts[i], units[i]);
        sep = " ";
    }
    if (at < cap)
        snprintf(out + at, cap - at, ")");
}

/* Upper-case names of the enumerations, as describe shows them. */
static const char *shell_bloom_name(enum wc_bloom b)
{
    switch (b) {
    case WC_BLOOM_NONE:
        return "NONE";
    case WC_BLOOM_ROW:
        return "ROW";
    case WC_BLOOM_ROWCOL:
        return "ROWCOL";
    }
    return "?";
}

static const char *shell_compression_name(enum wc_compression c)
{
    switch (c) {
    case WC_COMPRESSION_NONE:
        return "NONE";
    case WC_COMPRESSION_SNAPPY:
        return "SNAPPY";
    case WC_COMPRESSION_GZ:
        return "GZ";
    }
    return "?";
}

static const char *shell_encoding_name(enum wc_block_encoding e)
{
    switch (e) {
    case WC_ENCODING_NONE:
        return "NONE";
    case WC_ENCODING_PREFIX:
        return "PREFIX";
    case WC_ENCODING_DIFF:
        return "DIFF";
    case WC_ENCODING_FAST_DIFF:
        return "FAST_DIFF";
    case WC_ENCODING_ROW_INDEX_V1:
        return "ROW_INDEX_V1";
    }
    return "?";
}

static const char *shell_keep_deleted_name(enum wc_keep_deleted k)
{
    switch (k) {
    case WC_KEEP_DELETED_FALSE:
        return "FALSE";
    case WC_KEEP_DELETED_TRUE:
        return "TRUE";
    case WC_KEEP_DELETED_TTL:
        return "TTL";
    }
    return "?";
}

static const char *shell_durability_name(enum wc_durability d)
{
    switch (d) {
    case WC_DURABILITY_USE_DEFAULT:
        return "USE_DEFAULT";
    case WC_DURABILITY_SKIP_WAL:
        return "SKIP_WAL";
    case WC_DURABILITY_ASYNC_WAL:
        return "ASYNC_WAL";
    case WC_DURABILITY_SYNC_WAL:
        return "SYNC_WAL";
    case WC_DURABILITY_FSYNC_WAL:
        return "FSYNC_WAL";
    }
    return "?";
}

/* Writes a family name: printable by the rules of docs/storage-contract.md, "Data model", but shown
 * in binary form anyway. */
static void format_quoted_name(FILE *f, const char *name)
{
    putc('\'', f);
    shell_fput_binary(f, (const uint8_t *)name, strlen(name));
    putc('\'', f);
}

void shell_fput_family(FILE *f, const struct wc_family_desc *fd)
{
    char ttl[128];
    shell_format_ttl(fd->ttl_s, ttl, sizeof(ttl));
    fputs("{NAME => ", f);
    format_quoted_name(f, fd->name);
    fprintf(f,
            ", BLOOMFILTER => '%s', IN_MEMORY => '%s', VERSIONS => '%u', "
            "KEEP_DELETED_CELLS => '%s', DATA_BLOCK_ENCODING => '%s', COMPRESSION => '%s', "
            "TTL => '%s', MIN_VERSIONS => '%u', BLOCKCACHE => '%s', BLOCKSIZE => '%u', "
            "REPLICATION_SCOPE => '0'}",
            shell_bloom_name(fd->bloom), fd->in_memory ? "true" : "false", fd->versions,
            shell_keep_deleted_name(fd->keep_deleted), shell_encoding_name(fd->encoding),
            shell_compression_name(fd->compression), ttl, fd->min_versions,
            fd->blockcache ? "true" : "false", fd->blocksize);
}

void shell_fput_table_attributes(FILE *f, const struct wc_table_desc *d)
{
    /* keys in byte order: COMPACTION_ENABLED DURABILITY MAX_FILESIZE MEMSTORE_FLUSHSIZE
     * READONLY */
    const char *sep = "";
    bool any = !d->compaction_enabled || d->durability != WC_DURABILITY_USE_DEFAULT ||
               d->max_filesize || d->memstore_flushsize || d->readonly;
    if (!any)
        return;
    fputs(", {TABLE_ATTRIBUTES => {", f);
    if (!d->compaction_enabled) {
        fprintf(f, "%sCOMPACTION_ENABLED => 'false'", sep);
        sep = ", ";
    }
    if (d->durability != WC_DURABILITY_USE_DEFAULT) {
        fprintf(f, "%sDURABILITY => '%s'", sep, shell_durability_name(d->durability));
        sep = ", ";
    }
    if (d->max_filesize) {
        fprintf(f, "%sMAX_FILESIZE => '%" PRIu64 "'", sep, d->max_filesize);
        sep = ", ";
    }
    if (d->memstore_flushsize) {
        fprintf(f, "%sMEMSTORE_FLUSHSIZE => '%" PRIu64 "'", sep, d->memstore_flushsize);
        sep = ", ";
    }
    if (d->readonly)
        fprintf(f, "%sREADONLY => 'true'", sep);
    fputs("}}", f);
}
