/* auth.c: the bearer token, from a header or the web view's cookie (see auth.h). */
#include "auth.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <string.h>

#include "secret.h"

#define TOKEN_MAX 256  /* http.c reads at most this much of the token file */

static void to_hex(const char *s, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (; *s; s++) {
        *hex++ = digits[(unsigned char)*s >> 4];
        *hex++ = digits[(unsigned char)*s & 15];
    }
    *hex = 0;
}

/* The value of our cookie in a Cookie header ("a=1; ncclscope_token=..."),
 * copied into out; 0 if it is not there or too long. */
static int cookie_value(const char *header, char *out, size_t cap)
{
    const size_t nlen = strlen(NSC_AUTH_COOKIE);
    for (const char *p = header; p && *p; p = strchr(p, ';')) {
        p += strspn(p, "; ");
        if (strncmp(p, NSC_AUTH_COOKIE, nlen) != 0 || p[nlen] != '=')
            continue;
        const char *v = p + nlen + 1;
        size_t n = strcspn(v, ";");
        if (n >= cap)
            return 0;
        memcpy(out, v, n);
        out[n] = 0;
        return 1;
    }
    return 0;
}

int nsc_auth_ok(struct evhttp_request *req, const char *token)
{
    if (!token[0])
        return 1;
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *a = evhttp_find_header(in, "Authorization");
    if (a && strncmp(a, "Bearer ", 7) == 0)
        return nsc_secret_equal(a + 7, token);
    char given[2 * TOKEN_MAX + 1], want[2 * TOKEN_MAX + 1];
    if (strlen(token) >= TOKEN_MAX || !cookie_value(evhttp_find_header(in, "Cookie"), given, sizeof given))
        return 0;
    to_hex(token, want);
    return nsc_secret_equal(given, want);
}

int nsc_auth_login(struct evhttp_request *req, const char *qs, const char *token)
{
    struct evkeyvalq params;
    if (!token[0] || !qs || strlen(token) >= TOKEN_MAX || evhttp_parse_query_str(qs, &params))
        return 0;
    const char *given = evhttp_find_header(&params, "token");
    int ok = given && nsc_secret_equal(given, token);
    evhttp_clear_headers(&params);
    if (!ok)
        return 0;
    char cookie[sizeof NSC_AUTH_COOKIE + 2 * TOKEN_MAX + 64];
    char hex[2 * TOKEN_MAX + 1];
    to_hex(token, hex);
    snprintf(cookie, sizeof cookie, "%s=%s; Path=/; HttpOnly; SameSite=Strict", NSC_AUTH_COOKIE, hex);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Set-Cookie", cookie);
    return 1;
}
