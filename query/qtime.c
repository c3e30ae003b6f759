/* qtime.c - see qtime.h. Durations and start/end strings follow OpenTSDB's DateTime
 * (parseDuration, parseDateTimeString); calendar arithmetic follows DateTime.previousInterval and
 * java.util.GregorianCalendar.add.
 *
 * Invariants: (1) a qtime_tz holds its transitions sorted ascending with the UTC offset that
 * applies from each one on, and the offset before the first; it never changes after load, so
 * threads share it freely. (2) No function here reads or writes the process TZ.
 *
 * Zone files are TZif (RFC 8536); the version 2+ 64-bit block is used when present. Beyond the
 * last transition the last offset applies (Debian ships "fat" files with transitions to 2037). */
#include "query/qtime.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/coding.h"

struct qtime_tz {
    char name[64];
    size_t n;         /* transitions */
    int64_t *at_s;    /* transition instants, ascending */
    int32_t *off_s;   /* offset from at_s[i] on */
    int32_t before_s; /* offset before the first transition */
};

/* ---- durations ---------------------------------------------------------------------- */

int qtime_parse_duration(const char *s, int64_t *ms, int64_t *count, enum qtime_unit *unit,
                         struct ct_err *err)
{
    size_t len = strlen(s), nd = 0;
    while (nd < len && isdigit((unsigned char)s[nd]))
        nd++;
    if (nd == 0 || nd > 18)
        return ct_err_set(err, CT_EINVAL, "Invalid duration (number): %s", s);
    int64_t v = 0;
    for (size_t i = 0; i < nd; i++)
        v = v * 10 + (s[i] - '0');
    if (v <= 0)
        return ct_err_set(err, CT_EINVAL, "Zero or negative duration: %s", s);
    if (nd == len)
        return ct_err_set(err, CT_EINVAL, "Invalid duration (suffix): %s", s);
    char last = (char)tolower((unsigned char)s[len - 1]);
    int64_t mult;
    enum qtime_unit u;
    switch (last) {
    case 's':
        if (len >= 2 && tolower((unsigned char)s[len - 2]) == 'm') {
            mult = 1;
            u = QTIME_MS;
        } else {
            mult = 1000;
            u = QTIME_S;
        }
        break;
    case 'm':
        mult = 60000;
        u = QTIME_M;
        break;
    case 'h':
        mult = 3600000;
        u = QTIME_H;
        break;
    case 'd':
        mult = 86400000;
        u = QTIME_D;
        break;
    case 'w':
        mult = 7 * 86400000LL;
        u = QTIME_W;
        break;
    case 'n':
        mult = 30 * 86400000LL;
        u = QTIME_N;
        break;
    case 'y':
        mult = 365 * 86400000LL;
        u = QTIME_Y;
        break;
    default:
        return ct_err_set(err, CT_EINVAL, "Invalid duration (suffix): %s", s);
    }
    if (v > INT64_MAX / mult)
        return ct_err_set(err, CT_EINVAL, "Invalid duration (number): %s", s);
    *ms = v * mult;
    if (count)
        *count = v;
    if (unit)
        *unit = u;
    return CT_OK;
}

/* ---- civil calendar (proleptic Gregorian) ------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yoe + era * 400 + (*m <= 2);
}

static int days_in_month(int64_t y, int64_t m)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return dm[m - 1];
}

/* Local broken-down time. */
struct lt {
    int64_t y, mon, d; /* mon 1..12 */
    int64_t ms_of_day;
};

static struct lt to_local(int64_t utc_ms, const struct qtime_tz *tz)
{
    int64_t off = qtime_tz_offset_s(tz, floor_div(utc_ms, 1000));
    int64_t l = utc_ms + off * 1000;
    int64_t days = floor_div(l, 86400000);
    struct lt t;
    civil_from_days(days, &t.y, &t.mon, &t.d);
    t.ms_of_day = l - days * 86400000;
    return t;
}

static int64_t local_ms_to_utc(int64_t l, const struct qtime_tz *tz)
{
    int64_t ls = floor_div(l, 1000);
    int64_t o1 = qtime_tz_offset_s(tz, ls);
    int64_t o2 = qtime_tz_offset_s(tz, ls - o1);
    int64_t utc = l - o2 * 1000;
    int64_t o3 = qtime_tz_offset_s(tz, floor_div(utc, 1000));
    if (o3 != o2)
        utc = l - o3 * 1000;
    return utc;
}

static int64_t from_local(struct lt t, const struct qtime_tz *tz)
{
    /* normalise the month first; days_from_civil is linear in the day */
    int64_t m0 = t.mon - 1;
    t.y += floor_div(m0, 12);
    t.mon = m0 - floor_div(m0, 12) * 12 + 1;
    int64_t l = days_from_civil(t.y, t.mon, 1) * 86400000 + (t.d - 1) * 86400000 + t.ms_of_day;
    return local_ms_to_utc(l, tz);
}

/* ---- time zones --------------------------------------------------------------------- */

int32_t qtime_tz_offset_s(const struct qtime_tz *tz, int64_t t_s)
{
    if (!tz || tz->n == 0)
        return tz ? tz->before_s : 0;
    if (t_s < tz->at_s[0])
        return tz->before_s;
    size_t lo = 0, hi = tz->n; /* find the last at_s <= t_s */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (tz->at_s[mid] <= t_s)
            lo = mid;
        else
            hi = mid;
    }
    return tz->off_s[lo];
}

void qtime_tz_free(struct qtime_tz *tz)
{
    if (!tz)
        return;
    free(tz->at_s);
    free(tz->off_s);
    free(tz);
}

static int tz_parse(struct qtime_tz *tz, const uint8_t *b, size_t len)
{
    if (len < 44 || memcmp(b, "TZif", 4) != 0)
        return -1;
    int version = b[4];
    size_t p = 0;
    int pass = 0;
    for (;;) {
        if (p + 44 > len)
            return -1;
        uint32_t isut = coding_get_be32(b + p + 20), isstd = coding_get_be32(b + p + 24);
        uint32_t leap = coding_get_be32(b + p + 28), timecnt = coding_get_be32(b + p + 32);
        uint32_t typecnt = coding_get_be32(b + p + 36), charcnt = coding_get_be32(b + p + 40);
        size_t tw = pass == 0 ? 4 : 8;
        size_t body = (size_t)timecnt * tw + timecnt + (size_t)typecnt * 6 + charcnt +
                      (size_t)leap * (tw + 4) + isstd + isut;
        if (typecnt == 0 || typecnt > 256 || p + 44 + body > len)
            return -1;
        if (pass == 0 && version >= '2') {
            p += 44 + body;
            pass = 1;
            continue;
        }
        const uint8_t *tt = b + p + 44;
        const uint8_t *idx = tt + (size_t)timecnt * tw;
        const uint8_t *types = idx + timecnt;
        tz->at_s = calloc(timecnt ? timecnt : 1, sizeof(int64_t));
        tz->off_s = calloc(timecnt ? timecnt : 1, sizeof(int32_t));
        if (!tz->at_s || !tz->off_s)
            return -2;
        for (uint32_t i = 0; i < timecnt; i++) {
            tz->at_s[i] = tw == 4 ? (int64_t)(int32_t)coding_get_be32(tt + 4 * i)
                                  : (int64_t)coding_get_be64(tt + 8 * i);
            uint8_t ti = idx[i];
            if (ti >= typecnt)
                return -1;
            tz->off_s[i] = (int32_t)coding_get_be32(types + 6 * ti);
        }
        tz->n = timecnt;
        /* before the first transition: the first standard-time type (RFC 8536 3.2), else 0 */
        tz->before_s = (int32_t)coding_get_be32(types);
        for (uint32_t i = 0; i < typecnt; i++) {
            if (types[6 * i + 4] == 0) {
                tz->before_s = (int32_t)coding_get_be32(types + 6 * i);
                break;
            }
        }
        return 0;
    }
}

int qtime_tz_load(const char *name, struct qtime_tz **out, struct ct_err *err)
{
    struct qtime_tz *tz = calloc(1, sizeof(*tz));
    if (!tz)
        return ct_err_set(err, CT_ENOMEM, "out of memory loading a time zone");
    if (!name || !*name || !strcmp(name, "UTC") || !strcmp(name, "GMT") || !strcmp(name, "Z") ||
        !strcmp(name, "Etc/UTC")) {
        snprintf(tz->name, sizeof(tz->name), "%s", name && *name ? name : "UTC");
        *out = tz;
        return CT_OK;
    }
    bool ok = strlen(name) < sizeof(tz->name) && name[0] != '/' && !strstr(name, "..");
    for (const char *c = name; ok && *c; c++)
        ok = isalnum((unsigned char)*c) || strchr("/_-+", *c);
    if (ok) {
        char path[128];
        snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", name);
        FILE *f = fopen(path, "rb");
        ok = false;
        if (f) {
            uint8_t *buf = malloc(1 << 17);
            size_t n = buf ? fread(buf, 1, 1 << 17, f) : 0;
            fclose(f);
            int rc = buf ? tz_parse(tz, buf, n) : -2;
            free(buf);
            if (rc == -2) {
                qtime_tz_free(tz);
                return ct_err_set(err, CT_ENOMEM, "out of memory loading time zone %s", name);
            }
            ok = rc == 0;
        }
    }
    if (!ok) {
        qtime_tz_free(tz);
        return ct_err_set(err, CT_EINVAL, "The timezone specification could not be found");
    }
    snprintf(tz->name, sizeof(tz->name), "%s", name);
    *out = tz;
    return CT_OK;
}

/* ---- start / end strings ------------------------------------------------------------ */

static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return n > 0;
}

static int num_at(const char *s, size_t off, size_t n, int64_t *v)
{
    if (!all_digits(s + off, n))
        return -1;
    int64_t r = 0;
    for (size_t i = 0; i < n; i++)
        r = r * 10 + (s[off + i] - '0');
    *v = r;
    return 0;
}

static int parse_absolute(const char *s, const struct qtime_tz *tz, int64_t *out,
                          struct ct_err *err)
{
    size_t len = strlen(s);
    int64_t y, mo, d, h = 0, mi = 0, sec = 0;
    bool ok = len == 10 || len == 16 || len == 19;
    if (!ok)
        return ct_err_set(err, CT_EINVAL, "Invalid absolute date: %s", s);
    ok = num_at(s, 0, 4, &y) == 0 && s[4] == '/' && num_at(s, 5, 2, &mo) == 0 && s[7] == '/' &&
         num_at(s, 8, 2, &d) == 0;
    if (ok && len >= 16) {
        ok = (s[10] == '-' || s[10] == ' ') && num_at(s, 11, 2, &h) == 0 && s[13] == ':' &&
             num_at(s, 14, 2, &mi) == 0;
        if (ok && len == 19)
            ok = s[16] == ':' && num_at(s, 17, 2, &sec) == 0;
    }
    if (!ok)
        return ct_err_set(err, CT_EINVAL, "Invalid date: %s. Unparseable date: \"%s\"", s, s);
    /* SimpleDateFormat is lenient: out-of-range fields roll over */
    struct lt t = {y, mo, d, ((h * 60 + mi) * 60 + sec) * 1000};
    *out = from_local(t, tz);
    return CT_OK;
}

int qtime_parse(const char *s, const struct qtime_tz *tz, int64_t now_ms, int64_t *out_ms,
                struct ct_err *err)
{
    if (!s || !*s)
        return ct_err_set(err, CT_EINVAL, "Null timestamp");
    size_t len = strlen(s);
    if (!strcasecmp(s, "now")) {
        *out_ms = now_ms;
        return CT_OK;
    }
    if (len > 4 && !strcasecmp(s + len - 4, "-ago")) {
        char d[64];
        if (len - 4 >= sizeof(d))
            return ct_err_set(err, CT_EINVAL, "Invalid duration (number): %s", s);
        memcpy(d, s, len - 4);
        d[len - 4] = 0;
        int64_t ms;
        int rc = qtime_parse_duration(d, &ms, NULL, NULL, err);
        if (rc != CT_OK)
            return rc;
        *out_ms = now_ms - ms;
        return CT_OK;
    }
    if (strchr(s, '/') || strchr(s, ':'))
        return parse_absolute(s, tz, out_ms, err);
    if (len > 2 && !strcmp(s + len - 2, "ms") && all_digits(s, len - 2) && len - 2 <= 18) {
        int64_t v = 0;
        for (size_t i = 0; i + 2 < len; i++)
            v = v * 10 + (s[i] - '0');
        *out_ms = v;
        return CT_OK;
    }
    const char *dot = strchr(s, '.');
    char digits[32];
    size_t nd = 0;
    if (dot) {
        /* ^[0-9]{10}\.[0-9]{1,3}$ */
        size_t frac = len - (size_t)(dot - s) - 1;
        if (dot - s != 10 || frac < 1 || frac > 3 || !all_digits(s, 10) ||
            !all_digits(dot + 1, frac))
            return ct_err_set(err, CT_EINVAL,
                              "Invalid time: %s. Millisecond timestamps must be in the format "
                              "<seconds>.<ms> where the milliseconds are limited to 3 digits",
                              s);
        memcpy(digits, s, 10);
        memcpy(digits + 10, dot + 1, frac);
        nd = 10 + frac;
    } else {
        if (len >= sizeof(digits))
            return ct_err_set(err, CT_EINVAL, "Invalid time: %s. Value too long", s);
        memcpy(digits, s, len);
        nd = len;
    }
    digits[nd] = 0;
    const char *p = digits;
    bool neg = false;
    if (*p == '-' || *p == '+') {
        neg = *p == '-';
        p++;
    }
    if (!all_digits(p, strlen(p)) || strlen(p) > 18)
        return ct_err_set(err, CT_EINVAL, "Invalid time: %s. Invalid character in %s", s, s);
    int64_t v = 0;
    for (; *p; p++)
        v = v * 10 + (*p - '0');
    if (neg && v > 0)
        return ct_err_set(err, CT_EINVAL,
                          "Invalid time: %s. Negative timestamps are not supported.", s);
    if (len <= 10)
        v *= 1000;
    *out_ms = v;
    return CT_OK;
}

/* ---- calendar intervals ------------------------------------------------------------- */

int64_t qtime_cal_add(int64_t ts_ms, int64_t n, enum qtime_unit unit, const struct qtime_tz *tz)
{
    switch (unit) {
    case QTIME_MS:
        return ts_ms + n;
    case QTIME_S:
        return ts_ms + n * 1000;
    case QTIME_M:
        return ts_ms + n * 60000;
    case QTIME_H:
        return ts_ms + n * 3600000;
    case QTIME_D:
    case QTIME_W: {
        struct lt t = to_local(ts_ms, tz);
        t.d += unit == QTIME_W ? 7 * n : n;
        return from_local(t, tz);
    }
    case QTIME_N:
    case QTIME_Y: {
        struct lt t = to_local(ts_ms, tz);
        int64_t m0 = t.mon - 1 + (unit == QTIME_N ? n : 12 * n);
        t.y += floor_div(m0, 12);
        t.mon = m0 - floor_div(m0, 12) * 12 + 1;
        int dim = days_in_month(t.y, t.mon);
        if (t.d > dim)
            t.d = dim; /* GregorianCalendar pins the day to the month's end */
        return from_local(t, tz);
    }
    }
    return ts_ms;
}

int64_t qtime_cal_previous(int64_t ts_ms, int64_t interval, enum qtime_unit unit,
                           const struct qtime_tz *tz)
{
    if (interval < 1)
        interval = 1;
    struct lt t = to_local(ts_ms, tz);
    enum qtime_unit step_unit = unit;
    int64_t step = interval;
    switch (unit) {
    case QTIME_MS:
        t.ms_of_day -= t.ms_of_day % (1000 % interval == 0 ? 1000 : 60000);
        break;
    case QTIME_S:
        t.ms_of_day -= t.ms_of_day % (60 % interval == 0 ? 60000 : 3600000);
        break;
    case QTIME_M:
        if (60 % interval == 0)
            t.ms_of_day -= t.ms_of_day % 3600000;
        else
            t.ms_of_day = 0;
        break;
    case QTIME_H:
        t.ms_of_day = 0;
        if (24 % interval != 0)
            t.d = 1;
        break;
    case QTIME_D:
        t.ms_of_day = 0;
        t.d = 1;
        if (interval != 1)
            t.mon = 1;
        break;
    case QTIME_W: {
        t.ms_of_day = 0;
        if (2 % interval != 0) {
            t.mon = 1;
            t.d = 1;
        }
        int64_t days = days_from_civil(t.y, t.mon, t.d);
        int64_t dow = ((days + 4) % 7 + 7) % 7; /* 0 = Sunday, the first day of the week */
        t.d -= dow;
        step_unit = QTIME_D;
        step = 7;
        break;
    }
    case QTIME_N:
    case QTIME_Y:
        t.ms_of_day = 0;
        t.d = 1;
        t.mon = 1;
        break;
    }
    int64_t c = from_local(t, tz);
    if (c == ts_ms)
        return c;
    /* step forward past ts, then one back (bounded: at most a year of the smallest step) */
    int64_t prev = c;
    for (int guard = 0; c <= ts_ms && guard < 40000000; guard++) {
        prev = c;
        c = qtime_cal_add(c, step, step_unit, tz);
        if (c <= prev)
            break;
    }
    return prev;
}
