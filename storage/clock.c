/* clock.c - see clock.h.
 *
 * Invariant: clock_state is CLOCK_UNKNOWN (environment not read since start or the last
 * clock_reload()), CLOCK_WALL (CTSDB_NOW_MS unset or invalid) or CLOCK_PINNED (clock_pinned
 * holds its value, stored before the state with release order). */
#include "storage/clock.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

enum {
    CLOCK_UNKNOWN = 0,
    CLOCK_WALL = 1,
    CLOCK_PINNED = 2
};

static _Atomic int clock_state = CLOCK_UNKNOWN;
static _Atomic int64_t clock_pinned;

static int clock_read_env(void)
{
    const char *pin = getenv("CTSDB_NOW_MS");
    if (pin && *pin) {
        char *end;
        long long v = strtoll(pin, &end, 10);
        if (*end == '\0' && v >= 0) {
            atomic_store_explicit(&clock_pinned, (int64_t)v, memory_order_relaxed);
            atomic_store_explicit(&clock_state, CLOCK_PINNED, memory_order_release);
            return CLOCK_PINNED;
        }
    }
    atomic_store_explicit(&clock_state, CLOCK_WALL, memory_order_release);
    return CLOCK_WALL;
}

int64_t clock_now_ms(void)
{
    int st = atomic_load_explicit(&clock_state, memory_order_acquire);
    if (st == CLOCK_UNKNOWN)
        st = clock_read_env();
    if (st == CLOCK_PINNED)
        return atomic_load_explicit(&clock_pinned, memory_order_relaxed);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void clock_reload(void)
{
    atomic_store_explicit(&clock_state, CLOCK_UNKNOWN, memory_order_release);
}

uint64_t clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct timespec clock_realtime_in(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}
