/* auth.h: who may read the collector's HTTP endpoints (docs/security.md).
 *
 * Owns the two ways a request shows the bearer token: the header
 * "Authorization: Bearer <token>" (the CLI, Prometheus, scripts), or the
 * cookie NSC_AUTH_COOKIE that a browser got by opening a web view page with
 * ?token=<token> (a browser cannot add a header to a page it navigates to,
 * nor to an EventSource). The cookie holds the token in hex (a token may
 * hold bytes a cookie cannot); HttpOnly, so the pages' scripts never see it,
 * SameSite=Strict, so no other site's page sends it. Comparisons are
 * constant-time (secret.h).
 */
#ifndef NCCLSCOPE_COLLECTOR_AUTH_H
#define NCCLSCOPE_COLLECTOR_AUTH_H

struct evhttp_request;

#define NSC_AUTH_COOKIE "ncclscope_token"

/* 1 if req may be answered: no token configured (""), the right bearer
 * header, or the right cookie. */
int nsc_auth_ok(struct evhttp_request *req, const char *token);
/* 1 if the query string qs carries token=<the token>; then the reply to req
 * sets the cookie. 0 (and nothing set) otherwise. */
int nsc_auth_login(struct evhttp_request *req, const char *qs, const char *token);

#endif
