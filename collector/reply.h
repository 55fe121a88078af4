/* reply.h: the answers every endpoint shares, apart from the server that
 * routes to them (http.h), so that an endpoint's file needs only these.
 *
 * Owns the JSON error answer ({"error": msg} with its status code); the
 * live state's JSON, which needs the collector, is livejson.h's. The names
 * keep the nsc_http_ prefix of the API they answer for.
 */
#ifndef NCCLSCOPE_COLLECTOR_REPLY_H
#define NCCLSCOPE_COLLECTOR_REPLY_H

struct evhttp_request;
/* Answer req with {"error": msg} and status code (reason: its phrase). */
void nsc_http_json_error(struct evhttp_request *req, int code, const char *reason, const char *msg);

#endif
