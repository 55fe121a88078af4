/* units.h: numbers for people.
 *
 * Owns how the CLI shows a time, a size and a bandwidth: in the unit that
 * keeps three significant digits (812 ns, 4.69 ms, 1.50 s; 512 B, 4.00 MiB;
 * 12.3 GB/s), an instant on the collector's time base as UTC ISO-8601
 * (2026-11-28T17:30:00.123456Z) when the answer gave its wall clock
 * (wall_offset_ns, docs/api.md), or, with --raw, the exact integer the
 * source sent. A JSON member's unit is read from its name, the API's one
 * convention: "_ns" is nanoseconds (an instant when it is a start, stop, end,
 * completion, arrival, enqueue or window bound), "bytes" bytes, "gbps" GB/s.
 * Every table and every "name: value" line of the CLI goes through here, so
 * they agree; so do the time values a person types (--t0, --since).
 */
#ifndef NCCLSCOPE_CLI_UNITS_H
#define NCCLSCOPE_CLI_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"

typedef enum nsc_unit { NSC_UNIT_NONE, NSC_UNIT_NS, NSC_UNIT_INSTANT, NSC_UNIT_BYTES, NSC_UNIT_GBPS } nsc_unit;

/* How numbers are shown: the output mode and the answer's wall clock. */
typedef struct nsc_units {
    int raw;          /* --raw: exact integers */
    int has_wall;     /* wall_ns is known */
    int64_t wall_ns;  /* UTC ns since the epoch = collector time + wall_ns */
} nsc_units;

/* The unit of a JSON member named key (len bytes). */
nsc_unit nsc_unit_of(const char *key, size_t len);
/* value in unit, for a person (instants: UTC when u knows the wall clock,
 * else seconds on the collector's clock). */
void nsc_fmt_unit(const nsc_units *u, nsc_unit unit, double value, char *buf, size_t cap);
/* one when n is 1, else many: "1 job", "2 jobs". */
const char *nsc_noun(uint64_t n, const char *one, const char *many);
/* The answer's wall clock (its top-level wall_offset_ns), if it has one. */
void nsc_units_wall(nsc_units *u, const nsc_json *answer);

/* A time a person typed: a length ("250ms", "1.5s", "5m", "2h", "3d"; a bare
 * number is ns). 0, or -1 when it is none. */
int nsc_parse_span(const char *s, uint64_t *ns);
/* A UTC time: "2026-11-28T17:30:00Z", with an optional fraction of a second
 * and "Z" or "+00:00". 0, or -1 when it is none. */
int nsc_parse_utc(const char *s, int64_t *utc_ns);

#endif
