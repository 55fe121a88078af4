/* source.c: the collector's HTTP API or a store directory (see source.h). */
#include "source.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "diag.h"
#include "json.h"
#include "live.h"
#include "mono.h"
#include "query.h"
#include "store.h"

struct nsc_src {
    nsc_store *store;  /* --db: the store, read-only; else NULL (HTTP) */
    nsc_http_url url;
    char name[300];
    char token[512];
    int has_token;
    const char *ca_file;
    int timeout_ms;
};

static int read_token(const char *path, char *tok, size_t cap, char *err, size_t errcap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errcap, "token file %s: %s", path, strerror(errno));
        return -1;
    }
    size_t n = fread(tok, 1, cap - 1, f);
    fclose(f);
    tok[n] = 0;
    while (n && isspace((unsigned char)tok[n - 1]))
        tok[--n] = 0;
    if (n == 0) {
        snprintf(err, errcap, "token file %s is empty", path);
        return -1;
    }
    return 0;
}

/* --db names a store directory: one that holds the store's data.mdb. Any
 * other path is a bad value, told apart from a store that fails to open. */
static int open_store(const char *dir, nsc_store **st, char *err, size_t errcap)
{
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || stat(path, &sb) != 0) {
        snprintf(err, errcap, "--db %s: not a store directory (want the collector's --store directory, which holds data.mdb)",
                 dir);
        return NSC_DIAG_USAGE;
    }
    nsc_store_opts so = {.read_only = 1};
    int rc = nsc_store_open(dir, &so, st);
    if (rc != 0) {
        snprintf(err, errcap, "cannot open store %s: %s", dir, nsc_store_strerror(rc));
        return -1;
    }
    return 0;
}

int nsc_src_open(const nsc_src_opts *o, nsc_src **out, char *err, size_t errcap)
{
    nsc_src *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    s->timeout_ms = o->timeout_ms;
    if (o->db) {
        snprintf(s->name, sizeof s->name, "store %s", o->db);
        int rc = open_store(o->db, &s->store, err, errcap);
        if (rc != 0) {
            free(s);
            return rc;
        }
        *out = s;
        return 0;
    }
    const char *url = o->collector;
    if (!url)
        url = getenv("NCCLSCOPE_COLLECTOR");
    if (!url || !*url)
        url = NSC_DEFAULT_COLLECTOR;
    snprintf(s->name, sizeof s->name, "%s", url);
    s->ca_file = o->ca_file ? o->ca_file : getenv("NCCLSCOPE_CA_FILE");
    const char *env_token = getenv("NCCLSCOPE_TOKEN");
    int rc = nsc_http_parse_url(url, &s->url, err, errcap);
    if (rc == 0 && o->token_file) {
        rc = read_token(o->token_file, s->token, sizeof s->token, err, errcap);
        s->has_token = rc == 0;
    } else if (rc == 0 && env_token && *env_token) {
        snprintf(s->token, sizeof s->token, "%s", env_token);
        s->has_token = 1;
    }
    if (rc != 0) {
        free(s);
        return NSC_DIAG_USAGE;
    }
    *out = s;
    return 0;
}

void nsc_src_close(nsc_src *s)
{
    if (s->store)
        nsc_store_close(s->store);
    free(s);
}

const char *nsc_src_name(const nsc_src *s) { return s->name; }

/* The collector's refusal as one line: its {"error": ...} text if it sent one. */
static void http_refusal(const nsc_src *s, const char *endpoint, int status, const char *body,
                         char *err, size_t errcap)
{
    nsc_json_doc doc;
    nsc_json_error e;
    if (body[0] && nsc_json_parse(body, strlen(body), NULL, &doc, &e) == 0) {
        const char *msg = nsc_json_str(nsc_json_get(nsc_json_root(&doc), "error"));
        if (msg) {
            snprintf(err, errcap, "%s", msg);
            nsc_json_free(&doc);
            return;
        }
        nsc_json_free(&doc);
    }
    if (status == 401 || status == 403)
        snprintf(err, errcap, "collector at %s refused the request (HTTP %d): set NCCLSCOPE_TOKEN or --token-file",
                 s->name, status);
    else
        snprintf(err, errcap, "collector at %s answered HTTP %d for %s", s->name, status, endpoint);
}

/* status and live from a store: the live state rebuilt by nsc_live_from_store
 * at this moment, on the collector's clock (CLOCK_MONOTONIC: meaningful on
 * the collector's machine; elsewhere every process looks silent). live gives
 * one summary, framed as the collector's server-sent event. */
static int store_live(nsc_src *s, nsc_store_reader *rd, int summary, nsc_http_body_fn fn, void *arg,
                      char *err, size_t errcap)
{
    uint64_t now = nsc_mono_ns();
    nsc_live *l;
    int rc = nsc_live_from_store(rd, NULL, now, &l);
    if (rc != 0) {
        snprintf(err, errcap, "cannot rebuild the live state from %s: %s", s->name, nsc_store_strerror(rc));
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f) {
        if (summary)
            fputs("event: summary\ndata: ", f);
        rc = summary ? nsc_live_summary_json(l, now, f) : nsc_live_status_json(l, now, f);
        if (summary)
            fputs("\n\n", f);
        rc = fclose(f) || rc;
    }
    nsc_live_free(l);
    if (!f || rc) {
        free(text);
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    rc = fn(arg, text, len);
    free(text);
    return rc;
}

/* The same request answered in-process from the store. */
static int store_get(nsc_src *s, const char *endpoint, const char *qs, nsc_http_body_fn fn,
                     void *arg, char *err, size_t errcap)
{
    int live = strcmp(endpoint, "live") == 0;
    nsc_store_reader *rd;
    int code, rc = nsc_store_read_begin(s->store, &rd);
    if (rc != 0) {
        snprintf(err, errcap, "store: %s", nsc_store_strerror(rc));
        return -1;
    }
    if (live || strcmp(endpoint, "status") == 0) {
        rc = store_live(s, rd, live, fn, arg, err, errcap);
    } else {
        rc = nsc_diag_query_get(rd, endpoint, qs, fn, arg, err, errcap, &code);
        if (code == NSC_QUERY_EUNKNOWN)
            snprintf(err, errcap, "%s cannot be answered from a store, only by a collector", endpoint);
    }
    nsc_store_read_end(rd);
    return rc;
}

int nsc_src_get(nsc_src *s, const char *endpoint, const char *qs, int stream, nsc_http_body_fn fn,
                void *arg, char *err, size_t errcap)
{
    if (s->store)
        return store_get(s, endpoint, qs, fn, arg, err, errcap);
    char path[4096];
    if (snprintf(path, sizeof path, "/api/v1/%s%s%s", endpoint, qs && *qs ? "?" : "",
                 qs && *qs ? (qs[0] == '&' ? qs + 1 : qs) : "") >= (int)sizeof path) {
        snprintf(err, errcap, "query too long");
        return -1;
    }
    nsc_http_req req = {&s->url, path, s->has_token ? s->token : NULL, stream ? 0 : s->timeout_ms,
                        s->ca_file && *s->ca_file ? s->ca_file : NULL};
    int status = 0;
    char body[2048], why[256];
    int rc = nsc_http_get(&req, &status, fn, arg, body, sizeof body, why, sizeof why);
    if (rc == -1) {
        snprintf(err, errcap, "cannot reach collector at %s: %s", s->name, why);
        return -1;
    }
    if (status < 200 || status >= 300) {
        http_refusal(s, endpoint, status, body, err, errcap);
        return status == 400 ? NSC_DIAG_USAGE : -1;
    }
    return rc;
}
