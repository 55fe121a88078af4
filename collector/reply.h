/* reply.h: the answers every endpoint shares, apart from the server that
 * routes to them (http.h), so that an endpoint's file needs only these.
 *
 * Owns the JSON error answer ({"error": msg} with its status code) and the
 * live state rendered as JSON under the store's live lock. The names keep
 * the nsc_http_ prefix of the API they answer for.
 */
#ifndef NCCLSCOPE_COLLECTOR_REPLY_H
#define NCCLSCOPE_COLLECTOR_REPLY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "live.h"

struct nsc_collector;
struct evhttp_request;
/* Answer req with {"error": msg} and status code (reason: its phrase). */
void nsc_http_json_error(struct evhttp_request *req, int code, const char *reason, const char *msg);

/* JSON of the live state (nsc_live_status_json, ...), written under its
 * lock; malloc'd text and its length, or NULL when out of memory. */
typedef int (*nsc_http_live_fn)(const nsc_live *l, uint64_t now, FILE *out);
char *nsc_http_live_json(struct nsc_collector *c, nsc_http_live_fn fn, size_t *len);

#endif
