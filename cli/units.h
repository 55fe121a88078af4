/* units.h: numbers for people.
 *
 * Owns how the CLI shows a time, a size and a bandwidth: in the unit that
 * keeps three significant digits (812 ns, 4.69 ms, 1.50 s; 512 B, 4.00 MiB;
 * 12.3 GB/s), or, with --raw, as the exact integer the source sent. A JSON
 * member's unit is read from its name, the API's one convention: "_ns" is
 * nanoseconds, "bytes" bytes, "gbps" GB/s. Every table and every
 * "name: value" line of the CLI goes through here, so they agree.
 */
#ifndef NCCLSCOPE_CLI_UNITS_H
#define NCCLSCOPE_CLI_UNITS_H

#include <stddef.h>
#include <stdint.h>

typedef enum nsc_unit { NSC_UNIT_NONE, NSC_UNIT_NS, NSC_UNIT_BYTES, NSC_UNIT_GBPS } nsc_unit;

/* The unit of a JSON member named key (len bytes). */
nsc_unit nsc_unit_of(const char *key, size_t len);
/* value in unit, for a person. */
void nsc_fmt_unit(nsc_unit u, double value, char *buf, size_t cap);

#endif
