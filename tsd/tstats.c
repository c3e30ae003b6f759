/* tstats.c - the TSD's global counters (see tstats.h). */
#include "tsd/tstats.h"

_Atomic uint64_t tstats_counters[TSTATS_NCOUNTERS];
