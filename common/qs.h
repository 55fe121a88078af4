/* qs.h: building URL query strings ("&name=value&..."), as the CLI and the
 * diagnosis analysis (diag/) pass them to the API's endpoints. */
#ifndef NCCLSCOPE_QS_H
#define NCCLSCOPE_QS_H

#include <stddef.h>

/* Append "&name=value" (URL-encoded) to a query string. -1 if it does not fit. */
int nsc_qs_add(char *qs, size_t cap, const char *name, const char *value);

#endif
