/* qs.h: building URL query strings ("&name=value&..."), as the CLI and the
 * diagnosis analysis (diag/) pass them to the API's endpoints, and reading
 * a parameter's whole number, as the collector's endpoints take them. */
#ifndef NCCLSCOPE_QS_H
#define NCCLSCOPE_QS_H

#include <stddef.h>
#include <stdint.h>

/* Append "&name=value" (URL-encoded) to a query string. -1 if it does not fit. */
int nsc_qs_add(char *qs, size_t cap, const char *name, const char *value);

/* value (decimal digits only), or fallback when value is NULL (absent):
 * 0, or -1 when it is no whole number that fits. */
int nsc_qs_u64(const char *value, uint64_t fallback, uint64_t *out);

#endif
