/* fuzz_sst.c - libFuzzer target for the block-file reader (storage/engine/sst_read.c).
 *
 * Structure-aware: at start-up it writes one valid file per compression (NONE, SNAPPY, GZ) with a
 * ROWCOL bloom and small blocks. Each input picks one of them, then applies (offset, xor) byte
 * flips and an optional truncation from the input, writes the damaged file and opens it, walks it
 * forwards and backwards, and seeks. The reader must either report CT_ECORRUPT / CT_EIO with a
 * message naming the file, or return cells in strictly increasing order: never crash, hang or
 * read out of bounds. An input whose first byte is 0xFF is taken whole as the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/coding.h"
#include "storage/engine/sst.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *fuzz_files[3];
static size_t fuzz_sizes[3];
static char fuzz_dir[64];

static uint8_t *fuzz_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        abort();
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        abort();
    fclose(f);
    *len = (size_t)n;
    return buf;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(fuzz_dir, sizeof(fuzz_dir), "/tmp/ctsdb-fuzz-sst-XXXXXX");
    if (!mkdtemp(fuzz_dir))
        abort();
    const enum wc_compression comp[3] = {WC_COMPRESSION_NONE, WC_COMPRESSION_SNAPPY,
                                         WC_COMPRESSION_GZ};
    for (int k = 0; k < 3; k++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/seed%d.sst", fuzz_dir, k);
        struct sst_writer_options o = {1024, comp[k], WC_BLOOM_ROWCOL, WC_ENCODING_NONE, 300};
        struct sst_writer *w;
        struct ct_err err = {0};
        if (sst_writer_open(path, &o, &w, &err) != CT_OK)
            abort();
        for (int i = 0; i < 300; i++) {
            char row[16], val[64];
            int rl = snprintf(row, sizeof(row), "row%05d", i / 3);
            int vl = snprintf(val, sizeof(val), "value-%d-%d", i, i * 7);
            uint8_t qual[2] = {(uint8_t)'q', (uint8_t)('a' + i % 3)};
            struct cell c = {(const uint8_t *)row,
                             qual,
                             (const uint8_t *)val,
                             (uint32_t)rl,
                             2,
                             (uint32_t)vl,
                             4,
                             1000 + i,
                             (uint64_t)i + 1};
            if (sst_writer_add(w, &c, &err) != CT_OK)
                abort();
        }
        if (sst_writer_finish(w, NULL, &err) != CT_OK)
            abort();
        fuzz_files[k] = fuzz_slurp(path, &fuzz_sizes[k]);
        unlink(path);
    }
    return 0;
}

static void fuzz_walk(struct sst *f)
{
    struct ct_err err = {0};
    struct sst_iter *it;
    if (sst_iter_new(f, &it, &err) != CT_OK)
        return;
    struct cell prev_c;
    uint8_t prev[4096];
    size_t steps = 0;
    if (sst_iter_seek_first(it, &err) == CT_OK) {
        bool have = false;
        while (sst_iter_valid(it) && steps++ < 5000) {
            struct cell c;
            sst_iter_cell(it, &c);
            /* cells of a file that opened cleanly must stay ordered */
            if (have && cell_compare(&prev_c, &c) >= 0 && c.row_len + c.qual_len < sizeof(prev))
                abort();
            if (c.row_len + c.qual_len < sizeof(prev)) {
                memcpy(prev, c.row, c.row_len);
                memcpy(prev + c.row_len, c.qual, c.qual_len);
                prev_c = c;
                prev_c.row = prev;
                prev_c.qual = prev + c.row_len;
                have = true;
            } else {
                have = false;
            }
            if (sst_iter_next(it, &err) != CT_OK)
                break;
        }
    }
    steps = 0;
    if (sst_iter_seek_last(it, &err) == CT_OK)
        while (sst_iter_valid(it) && steps++ < 5000)
            if (sst_iter_prev(it, &err) != CT_OK)
                break;
    struct cell target = {
        (const uint8_t *)"row00050", (const uint8_t *)"qb", NULL, 8, 2, 0, 4, 1200, 0};
    if (sst_iter_seek(it, &target, &err) == CT_OK && sst_iter_valid(it))
        (void)sst_iter_next(it, &err);
    if (sst_iter_seek_for_prev(it, &target, &err) == CT_OK && sst_iter_valid(it))
        (void)sst_iter_prev(it, &err);
    sst_iter_free(it);
    (void)sst_may_contain_row(f, (const uint8_t *)"row00001", 8);
    uint8_t mid[WC_MAX_ROW_BYTES];
    (void)sst_middle_row(f, mid);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t *file;
    size_t len;
    if (data[0] == 0xFF) {
        len = size - 1;
        file = malloc(len ? len : 1);
        if (!file)
            return 0;
        memcpy(file, data + 1, len);
    } else {
        int k = data[0] % 3;
        len = fuzz_sizes[k];
        file = malloc(len);
        if (!file)
            return 0;
        memcpy(file, fuzz_files[k], len);
        size_t i = 1;
        if (data[0] & 0x80 && size >= 5) { /* truncate */
            len = coding_get_be32(data + 1) % (len + 1);
            i = 5;
        }
        for (; i + 4 <= size; i += 4) {
            size_t off = coding_get_be32(data + i) >> 8;
            if (len)
                file[off % len] ^= data[i + 3] ? data[i + 3] : 1;
        }
    }
    char path[160];
    snprintf(path, sizeof(path), "%s/input.sst", fuzz_dir);
    FILE *out = fopen(path, "wb");
    if (!out || fwrite(file, 1, len, out) != len)
        abort();
    fclose(out);
    free(file);
    struct ct_err err = {0};
    struct sst *f = NULL;
    struct sst_read_options ro = {false, false};
    int rc = sst_open(path, 1, NULL, &ro, &f, &err);
    if (rc == CT_OK) {
        fuzz_walk(f);
        sst_unref(f);
    } else if (!strstr(err.msg, "input.sst")) {
        abort(); /* an error must name the file */
    }
    unlink(path);
    return 0;
}
