/* hour_bytes.c - where the bytes of ctsdb's compressed hour cells go on tools/bench/tsd_load.c's
 * value model: per metric class, the value bytes dpcodec_compressed_encode() writes per point,
 * next to the entropy of the generator (what no lossless format can go below), and the cost of
 * encoding and decoding those cells (run it under callgrind for instruction counts).
 *
 * The points are tsd_load's, exactly: hosts x 20 metrics, one point per series every 10 s from
 * tsd_load's default start, the value text made by the same function (value_of below must stay
 * a copy of tsd_load.c's; `--check FILE` compares it with a `tsd_load --print` stream, which is
 * what a TSD parses), parsed as the TSD parses it (an integer, or strtod for "%.2f" text: the
 * same double, typed by OpenTSDB's rule). Each series' hour (360 points) is one cell.
 *
 * Usage: hour_bytes [--hosts H] [--hours N] [--decode R] [--class C] [--check FILE]
 *   prints one line per class: series, points, value bytes, bytes/point, entropy bytes/point;
 *   then the total, and the cell overhead (11-byte qualifier) separately. --decode R decodes
 *   every cell R times with dpcodec_row_decode_cols() (the query path) after encoding.
 *   --class C (0..4, the order of the table) keeps the series of that class alone.
 * Build: `make bench` builds it (tools/bench/bench.mk) as build/release/tools/bench/hour_bytes.
 * Instructions per point: valgrind --tool=callgrind --toggle-collect=dpcodec_compressed_encode
 *   (or =dpcodec_row_decode_cols) hour_bytes --hosts 10 --hours 4 --decode 1; divide the
 *   total by the points. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/dpcodec.h"

#define HB_METRICS 20
#define HB_STEP_S  10
#define HB_START   1356998400LL /* tsd_load's default --start, a whole hour */
#define HB_PER_H   (3600 / HB_STEP_S)

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* A copy of tsd_load.c's value_of (host h, metric m, interval k): keep the two the same
 * (`--check` compares them). */
static void value_of(int h, int m, int k, char *out, size_t n)
{
    uint64_t series = mix((uint64_t)h * 1000003u + (uint64_t)m);
    uint64_t noise = mix(series ^ ((uint64_t)k * 0x9e3779b97f4a7c15ULL));
    int mm = m % 20;
    if (mm == 7 || mm == 8 || mm == 10 || mm == 11) {
        uint64_t base = series % 1000000000000ULL;
        uint64_t v = base + (uint64_t)k * 15000000u + noise % 5000000u;
        snprintf(out, n, "%llu", (unsigned long long)v);
    } else if (mm >= 4 && mm <= 6) {
        uint64_t level = mix(series ^ (uint64_t)(k / 30)) % 1000000000u;
        uint64_t v = 4500000000ULL + level + noise % 1048576u;
        snprintf(out, n, "%llu", (unsigned long long)v);
    } else if (mm == 12 || mm == 13) {
        snprintf(out, n, "%llu", (unsigned long long)(series % 1000 + (uint64_t)k / 97));
    } else if (mm >= 17) {
        snprintf(out, n, "%llu", (unsigned long long)(noise % 500));
    } else {
        double phase = (double)(series % 6283) / 1000.0;
        double v = 50.0 + 30.0 * __builtin_sin((double)k / 360.0 + phase) +
                   (double)(noise % 2000) / 100.0 - 10.0;
        if (v < 0)
            v = 0;
        if (v > 100)
            v = 100;
        snprintf(out, n, "%.2f", v);
    }
}

enum hb_class {
    HB_COUNTER,
    HB_BYTES,
    HB_SLOW,
    HB_SMALL,
    HB_DECIMAL,
    HB_NCLASS
};
static const char *const hb_class_names[HB_NCLASS] = {
    "counters (+1.5e7, noise 5e6)", "byte gauges (levels, noise 2^20)", "slow counters",
    "small integers (0..499)", "two-decimal gauges"};

static enum hb_class hb_class_of(int m)
{
    int mm = m % 20;
    if (mm == 7 || mm == 8 || mm == 10 || mm == 11)
        return HB_COUNTER;
    if (mm >= 4 && mm <= 6)
        return HB_BYTES;
    if (mm == 12 || mm == 13)
        return HB_SLOW;
    if (mm >= 17)
        return HB_SMALL;
    return HB_DECIMAL;
}

/* Bits per point of the generator's randomness (given the series, whose constants are a few
 * bits per series, spread over its points: left out). Counters: a uniform of 5e6 values per
 * point around a known slope; byte gauges: a uniform of 2^20 per point plus a uniform level of
 * 1e9 values every 30 points; small integers: uniform of 500; two-decimal gauges: a uniform
 * of 2000 hundredths around a known wave; slow counters: none. */
static double hb_entropy_bits(enum hb_class c)
{
    switch (c) {
    case HB_COUNTER:
        return log2(5e6);
    case HB_BYTES:
        return 20.0 + log2(1e9) / 30.0;
    case HB_SMALL:
        return log2(500.0);
    case HB_DECIMAL:
        return log2(2000.0);
    default:
        return 0;
    }
}

static struct dpcodec_point hb_parse(int64_t ts_ms, const char *s)
{
    if (strchr(s, '.'))
        return dpcodec_point_real(ts_ms, false, strtod(s, NULL));
    return dpcodec_point_int(ts_ms, false, strtoll(s, NULL, 10));
}

/* --check: every line of a `tsd_load --print` stream (any --hosts, --intervals, one connection)
 * must carry the value this file's value_of gives. */
static int hb_check(const char *path)
{
    static const char *const names[HB_METRICS] = {
        "cpu.user",     "cpu.system",   "cpu.idle",        "cpu.iowait",       "mem.used",
        "mem.free",     "mem.cached",   "disk.read_bytes", "disk.write_bytes", "disk.used_pct",
        "net.rx_bytes", "net.tx_bytes", "net.rx_errors",   "net.tx_errors",    "load.1m",
        "load.5m",      "load.15m",     "procs.running",   "procs.blocked",    "tcp.established"};
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 1;
    }
    char line[512], metric[128], val[64], want[64];
    long long ts;
    int h;
    long lines = 0, bad = 0;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "put sys.%127s %lld %63s host=host_%d", metric, &ts, val, &h) != 4)
            continue;
        int m = 0;
        while (m < HB_METRICS && strcmp(names[m], metric) != 0)
            m++;
        if (m == HB_METRICS)
            continue;
        value_of(h, m, (int)((ts - HB_START) / HB_STEP_S), want, sizeof(want));
        lines++;
        if (strcmp(want, val) != 0 && bad++ < 5)
            fprintf(stderr, "differs: %s (want %s)", line, want);
    }
    fclose(f);
    printf("checked %ld lines, %ld differ\n", lines, bad);
    return bad || lines == 0;
}

int main(int argc, char **argv)
{
    int hosts = 100, hours = 24, decode = 0, only = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--hosts") && i + 1 < argc)
            hosts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hours") && i + 1 < argc)
            hours = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--decode") && i + 1 < argc)
            decode = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--class") && i + 1 < argc)
            only = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--check") && i + 1 < argc)
            return hb_check(argv[++i]);
        else {
            fprintf(stderr, "usage: hour_bytes [--hosts H] [--hours N] [--decode R] "
                            "[--class C] [--check TSD_LOAD_PRINT_FILE]\n");
            return 2;
        }
    }
    size_t ncells = (size_t)hosts * HB_METRICS * (size_t)hours;
    size_t cap = dpcodec_compressed_bound(HB_PER_H);
    uint8_t *vals = malloc(ncells * cap);
    size_t *vlen = malloc(ncells * sizeof(*vlen));
    if (!vals || !vlen) {
        fprintf(stderr, "hour_bytes: out of memory\n");
        return 1;
    }
    struct dpcodec_point pts[HB_PER_H];
    uint64_t bytes[HB_NCLASS] = {0}, points[HB_NCLASS] = {0}, series[HB_NCLASS] = {0};
    struct ct_err err = {0};
    size_t c = 0, nenc = 0;
    for (int h = 0; h < hosts; h++) {
        for (int m = 0; m < HB_METRICS; m++) {
            enum hb_class cl = hb_class_of(m);
            if (only >= 0 && (int)cl != only) {
                c += (size_t)hours;
                continue;
            }
            series[cl]++;
            for (int hr = 0; hr < hours; hr++, c++) {
                int64_t base_s = HB_START + hr * 3600LL;
                for (int j = 0; j < HB_PER_H; j++) {
                    char s[64];
                    int k = hr * HB_PER_H + j;
                    value_of(h, m, k, s, sizeof(s));
                    pts[j] = hb_parse((base_s + (int64_t)j * HB_STEP_S) * 1000, s);
                }
                if (dpcodec_compressed_encode(base_s, pts, HB_PER_H, vals + c * cap, &vlen[c],
                                              &err) != CT_OK) {
                    fprintf(stderr, "hour_bytes: %s\n", err.msg);
                    return 1;
                }
                bytes[cl] += vlen[c];
                points[cl] += HB_PER_H;
                nenc++;
            }
        }
    }
    uint64_t tb = 0, tp = 0, ts = 0;
    double tent = 0;
    printf("%-34s %7s %10s %11s %8s %8s\n", "class", "series", "points", "value B", "B/point",
           "entropy");
    for (int cl = 0; cl < HB_NCLASS; cl++) {
        double ent = hb_entropy_bits((enum hb_class)cl) / 8;
        printf("%-34s %7llu %10llu %11llu %8.4f %8.4f\n", hb_class_names[cl],
               (unsigned long long)series[cl], (unsigned long long)points[cl],
               (unsigned long long)bytes[cl], points[cl] ? (double)bytes[cl] / points[cl] : 0, ent);
        tb += bytes[cl];
        tp += points[cl];
        ts += series[cl];
        tent += ent * points[cl];
    }
    printf("%-34s %7llu %10llu %11llu %8.4f %8.4f\n", "all (cell values)", (unsigned long long)ts,
           (unsigned long long)tp, (unsigned long long)tb, (double)tb / tp, tent / tp);
    printf("%-34s %7s %10s %11zu %8.4f\n", "+ qualifiers (11 B a cell)", "", "",
           nenc * DPCODEC_CQ_LEN, (double)(tb + nenc * DPCODEC_CQ_LEN) / tp);
    if (decode > 0) {
        struct dpcodec_cols cols;
        dpcodec_cols_init(&cols);
        uint64_t sum = 0;
        uint8_t q[DPCODEC_CQ_LEN];
        memcpy(q, DPCODEC_CQ, DPCODEC_CQ_PREFIX_LEN);
        memset(q + DPCODEC_CQ_PREFIX_LEN, 0, DPCODEC_CQ_LEN - DPCODEC_CQ_PREFIX_LEN);
        for (int r = 0; r < decode; r++) {
            c = 0;
            for (int h = 0; h < hosts; h++)
                for (int m = 0; m < HB_METRICS; m++)
                    for (int hr = 0; hr < hours; hr++, c++) {
                        if (only >= 0 && (int)hb_class_of(m) != only)
                            continue;
                        struct wc_cell cell = {0};
                        cell.qualifier = wc_bytes_of(q, sizeof(q));
                        cell.value = wc_bytes_of(vals + c * cap, vlen[c]);
                        cell.ts_ms = 1;
                        cell.type = WC_TYPE_PUT;
                        if (dpcodec_row_decode_cols(HB_START + hr * 3600LL, &cell, 1, &cols, NULL,
                                                    &err) != CT_OK) {
                            fprintf(stderr, "hour_bytes: decode: %s\n", err.msg);
                            return 1;
                        }
                        for (size_t i = 0; i < cols.n; i++)
                            sum += cols.val[i];
                    }
        }
        printf("decoded %d x %llu points (checksum %016llx)\n", decode, (unsigned long long)tp,
               (unsigned long long)sum);
        dpcodec_cols_free(&cols);
    }
    free(vals);
    free(vlen);
    return 0;
}
