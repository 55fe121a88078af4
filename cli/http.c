/* http.c: a blocking HTTP(S) client on libcurl (see http.h). */
#include "http.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nsc_http_parse_url(const char *url, nsc_http_url *out, char *err, size_t errcap)
{
    memset(out, 0, sizeof *out);
    out->tls = strncmp(url, "https://", 8) == 0;
    if (!out->tls && strncmp(url, "http://", 7) != 0) {
        snprintf(err, errcap, "collector URL must start with http:// or https:// (got '%s')", url);
        return -1;
    }
    const char *h = url + (out->tls ? 8 : 7), *slash = strchr(h, '/');
    size_t hostport = slash ? (size_t)(slash - h) : strlen(h);
    const char *colon = memchr(h, ':', hostport);
    size_t hl = colon ? (size_t)(colon - h) : hostport;
    size_t pl = colon ? hostport - hl - 1 : 0;
    if (hl == 0 || hl >= sizeof out->host || (colon && (pl == 0 || pl >= sizeof out->port))) {
        snprintf(err, errcap, "bad collector URL '%s'", url);
        return -1;
    }
    memcpy(out->host, h, hl);
    if (colon)
        memcpy(out->port, colon + 1, pl);
    else
        strcpy(out->port, out->tls ? "443" : "80");
    for (const char *p = out->port; *p; p++)
        if (*p < '0' || *p > '9') {
            snprintf(err, errcap, "bad port in collector URL '%s'", url);
            return -1;
        }
    if (slash) {
        size_t bl = strlen(slash);
        while (bl && slash[bl - 1] == '/')
            bl--;
        if (bl >= sizeof out->base) {
            snprintf(err, errcap, "collector URL path too long");
            return -1;
        }
        memcpy(out->base, slash, bl);
    }
    return 0;
}

typedef struct transfer {
    CURL *h;
    nsc_http_body_fn fn;
    void *arg;
    int rc;           /* the body callback's nonzero return */
    char *errbody;
    size_t errlen, errcap;
} transfer;

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    transfer *t = arg;
    size_t len = size * n;
    long status = 0;
    curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
        t->rc = t->fn(t->arg, data, len);
        return t->rc ? 0 : len;
    }
    size_t keep = t->errlen + 1 < t->errcap ? t->errcap - 1 - t->errlen : 0;
    keep = keep < len ? keep : len;
    memcpy(t->errbody + t->errlen, data, keep);
    t->errlen += keep;
    t->errbody[t->errlen] = 0;
    return len;
}

/* curl's failure in the words of the system where it has them. */
static void why(CURL *h, CURLcode rc, const char *detail, char *err, size_t errcap)
{
    long os = 0;
    curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os);
    if (rc == CURLE_COULDNT_CONNECT && os)
        snprintf(err, errcap, "%s", strerror((int)os));
    else if (rc == CURLE_OPERATION_TIMEDOUT)
        snprintf(err, errcap, "timed out");
    else
        snprintf(err, errcap, "%s", detail[0] ? detail : curl_easy_strerror(rc));
}

/* libcurl started on the first request only (a --db run, --help and
 * --version never pay for TLS's start), and released at exit. */
static int curl_started(void)
{
    static int state;  /* 0: not yet, 1: up, -1: failed */
    if (state == 0) {
        state = curl_global_init(CURL_GLOBAL_DEFAULT) == 0 ? 1 : -1;
        if (state == 1)
            atexit(curl_global_cleanup);
    }
    return state == 1;
}

int nsc_http_get(const nsc_http_req *req, int *status, nsc_http_body_fn fn, void *arg,
                 char *errbody, size_t errbody_cap, char *err, size_t errcap)
{
    const nsc_http_url *u = req->url;
    char url[4096], auth[600], detail[CURL_ERROR_SIZE] = "";
    CURL *h = curl_started() ? curl_easy_init() : NULL;
    struct curl_slist *headers = NULL;
    if (!h) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    snprintf(url, sizeof url, "%s://%s%s%s:%s%s%s", u->tls ? "https" : "http", strchr(u->host, ':') ? "[" : "",
             u->host, strchr(u->host, ':') ? "]" : "", u->port, u->base, req->path);
    if (req->token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", req->token);
        headers = curl_slist_append(headers, auth);
    }
    transfer t = {h, fn, arg, 0, errbody, 0, errbody_cap};
    errbody[0] = 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, detail);
    if (req->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, req->ca_file);
    if (req->timeout_ms > 0) {
        /* Bounded per wait: the connection, and any stretch without a byte. */
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)req->timeout_ms);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)(req->timeout_ms + 999) / 1000);
    }
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    *status = (int)code;
    int out = 0;
    if (rc == CURLE_WRITE_ERROR && t.rc)
        out = t.rc;
    else if (rc != CURLE_OK) {
        why(h, rc, detail, err, errcap);
        out = -1;
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
    return out;
}
