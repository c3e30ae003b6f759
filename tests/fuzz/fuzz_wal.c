/* fuzz_wal.c - libFuzzer target for write-ahead log replay (storage/engine/wal.c).
 *
 * The input is split into two segments at its first byte (a fraction of the rest). Unless the
 * input's second byte is 0xFF, each segment gets a valid segment header, so the fuzzer works on
 * record framing (lengths, CRCs, torn tails). Replay must either succeed (the last segment's torn
 * tail truncated away) or report CT_ECORRUPT naming a segment; it must never crash, and a second
 * replay after a successful one must deliver exactly the same records. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/engine/wal.h"
#include "storage/engine/wal_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_count {
    uint64_t n;
    uint32_t crc;
};

static int fuzz_count_record(void *arg, uint64_t seq, const uint8_t *payload, size_t len,
                             struct ct_err *err)
{
    (void)err;
    struct fuzz_count *c = arg;
    c->n++;
    uint8_t s[8];
    coding_put_be64(s, seq);
    c->crc = crc32c_extend(c->crc, s, 8);
    c->crc = crc32c_extend(c->crc, payload, len);
    return CT_OK;
}

static void fuzz_write_segment(const char *dir, uint64_t num, bool header, const uint8_t *p,
                               size_t len)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s%020llu%s", dir, WAL_SEGMENT_PREFIX, (unsigned long long)num,
             WAL_SEGMENT_SUFFIX);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (header) {
        uint8_t h[WAL_SEGMENT_HEADER_BYTES] = {0};
        coding_put_be32(h, WAL_MAGIC);
        h[4] = WAL_VERSION;
        coding_put_be64(h + 8, num);
        fwrite(h, 1, sizeof(h), f);
    }
    if (len && fwrite(p, 1, len, f) != len)
        abort();
    fclose(f);
}

static void fuzz_rm_dir(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    char dir[64];
    snprintf(dir, sizeof(dir), "/tmp/ctsdb-fuzz-wal-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    bool header = data[1] != 0xFF;
    const uint8_t *body = data + 2;
    size_t blen = size - 2;
    size_t cut = blen * data[0] / 255;
    fuzz_write_segment(dir, 1, header, body, cut);
    fuzz_write_segment(dir, 2, header, body + cut, blen - cut);

    struct ct_err err = {0};
    struct wal_options o = {.segment_bytes = 1 << 20};
    struct wal *w = NULL;
    struct fuzz_count first = {0, 0};
    int rc = wal_open(dir, &o, &w, &err);
    if (rc == CT_OK) {
        rc = wal_replay(w, fuzz_count_record, &first, &err);
        wal_close(w);
        if (rc == CT_OK) {
            /* replay is repeatable: the truncated tail is gone, the records stay */
            struct fuzz_count again = {0, 0};
            w = NULL;
            if (wal_open(dir, &o, &w, &err) != CT_OK)
                abort();
            if (wal_replay(w, fuzz_count_record, &again, &err) != CT_OK)
                abort();
            wal_close(w);
            if (again.n != first.n || again.crc != first.crc)
                abort();
        } else if (!strstr(err.msg, "wal-")) {
            abort(); /* corruption must name the segment */
        }
    }
    fuzz_rm_dir(dir);
    return 0;
}
