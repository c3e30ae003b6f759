/* build_info.h - the time this binary was built, one value for every place that reports it
 * (`ctsdb version`, /api/version, the telnet `version` command).
 *
 * Invariant: the value is fixed at build time and is the same in every caller. It comes from
 * $(BUILD)/gen/build_time.inc (given to build_info.c as -DCTSDB_BUILD_TIME_S), which the
 * Makefile writes once per build in which any object of the binary was recompiled:
 * SOURCE_DATE_EPOCH when that is set (a reproducible build), else the clock at that moment. */
#ifndef CT_TSD_BUILD_INFO_H
#define CT_TSD_BUILD_INFO_H

#include <stddef.h>
#include <stdint.h>

/* The build time in seconds since the epoch (UTC). */
int64_t build_info_time_s(void);
/* Writes the build time as OpenTSDB prints it, "YYYY/MM/DD HH:MM:SS +0000" (UTC), into buf
 * (NUL-terminated, truncated to cap) and returns buf. */
char *build_info_date(char *buf, size_t cap);

#endif
