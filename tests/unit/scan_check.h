/* scan_check.h: the differential check between nsc_batch_scan and
 * nsc_batch_decode, shared by the unit test and the wire fuzz target. */
#ifndef NCCLSCOPE_SCAN_CHECK_H
#define NCCLSCOPE_SCAN_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* Scan and decode msg[0..len) and compare: the same result code and, for an
 * accepted message, the same header, record counts, definitions and
 * counters, and exactly the events the keep settings select, equal to their
 * decoded form and at their record numbers, and the states and completions
 * when s->keep_states. s is reused (keep_types and keep_flags are set
 * here, keep_states by the caller). Returns NULL when they agree, else what differs. */
const char *scan_check(const void *msg, size_t len, uint32_t keep_types, uint8_t keep_flags, nsc_scan *s);

#endif
