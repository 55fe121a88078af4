/* utc.h: an instant as UTC ISO-8601, the one way every part writes one.
 *
 * The API's *_utc members (engine/query, engine/live), the trace's metadata
 * (export.c) and the CLI's instants all go through nsc_utc_iso, so the same
 * instant reads the same everywhere: "2026-11-28T20:11:05.123456Z", to the
 * microsecond (truncated, as the web view's), always with "Z".
 */
#ifndef NSC_UTC_H
#define NSC_UTC_H

#include <stddef.h>
#include <stdint.h>

/* Longest string nsc_utc_iso writes, with its NUL. */
#define NSC_UTC_MAX 40

/* utc_ns (ns since the epoch) as ISO-8601 into buf ("?" if it cannot be). */
void nsc_utc_iso(int64_t utc_ns, char *buf, size_t cap);

#endif
