/* chanswer.c: one request to ClickHouse and its answer (see chanswer.h). */
#include "chanswer.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "chrows.h"
#include "query.h"

static size_t to_file(char *p, size_t size, size_t n, void *f)
{
    return fwrite(p, 1, size * n, f);
}

/* ClickHouse's error text (the answer of a failed request) into err. */
static void error_text(FILE *f, const char *what, long code, char *err, size_t errcap)
{
    char text[240] = "";
    size_t n = 0;
    if (fflush(f) == 0 && fseek(f, 0, SEEK_SET) == 0)
        n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    text[strcspn(text, "\r\n")] = 0;
    snprintf(err, errcap, "clickhouse: %s: HTTP %ld: %s", what, code, text);
}

int nsc_chanswer_post(const nsc_chconn *conn, const char *url, const void *body, size_t len, long max_s,
                    const char *what, FILE *f, char *err, size_t errcap)
{
    CURL *h = curl_easy_init();
    if (!h) {
        snprintf(err, errcap, "clickhouse: libcurl: cannot start");
        return NSC_QUERY_ESTORE;
    }
    nsc_chconn_apply(conn, h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    /* a large answer may take long, a silent server must not hold the worker */
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)NSC_CHANSWER_SILENT_S);
    if (max_s > 0)
        curl_easy_setopt(h, CURLOPT_TIMEOUT, max_s);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, to_file);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, f);
    long code = 0;
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    if (rc == CURLE_OK && code == 200 && fflush(f) == 0)
        return 0;
    if (rc != CURLE_OK)
        snprintf(err, errcap, "clickhouse: %s: %s", what, curl_easy_strerror(rc));
    else
        error_text(f, what, code, err, errcap);
    return NSC_QUERY_ESTORE;
}

/* A file of tmpdir that is gone once closed (unlinked at once). */
static FILE *scratch_file(const char *tmpdir, char *err, size_t errcap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" NSC_CHANSWER_PREFIX "XXXXXX", tmpdir);
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w+") : NULL;
    if (fd >= 0)
        unlink(path);
    if (!f) {
        if (fd >= 0)
            close(fd);
        snprintf(err, errcap, "cannot make a file in %s", tmpdir);
    }
    return f;
}

int nsc_chanswer_fetch(const nsc_chconn *conn, const char *server, const char *tmpdir, const char *sql,
                       const char *what, nsc_chanswer *a, char *err, size_t errcap)
{
    memset(a, 0, sizeof *a);
    FILE *f = scratch_file(tmpdir, err, errcap);
    if (!f)
        return NSC_QUERY_ESTORE;
    int rc = nsc_chanswer_post(conn, server, sql, strlen(sql), 0, what, f, err, errcap);
    long len = rc ? 0 : ftell(f);
    if (!rc && len > 0) {
        a->len = (size_t)len;
        a->map = mmap(NULL, a->len, PROT_READ, MAP_PRIVATE, fileno(f), 0);
        if (a->map == MAP_FAILED) {
            a->map = NULL;
            snprintf(err, errcap, "cannot map the answer of %s", what);
            rc = NSC_QUERY_ESTORE;
        }
    }
    fclose(f);  /* the map keeps the file's pages */
    a->r = (nsc_rbuf){a->map, a->map ? a->map + a->len : NULL, 0};
    return rc;
}

void nsc_chanswer_free(nsc_chanswer *a)
{
    if (a->map)
        munmap(a->map, a->len);
    memset(a, 0, sizeof *a);
}

int nsc_chanswer_post_text(const nsc_chconn *conn, const char *url, const void *body, size_t len, long max_s,
                         const char *what, char **ans, size_t *anslen, char *err, size_t errcap)
{
    *ans = NULL;
    FILE *f = open_memstream(ans, anslen);
    if (!f) {
        snprintf(err, errcap, "out of memory");
        return NSC_QUERY_ESTORE;
    }
    int rc = nsc_chanswer_post(conn, url, body, len, max_s, what, f, err, errcap);
    if (fclose(f) && !rc) {
        snprintf(err, errcap, "out of memory");
        rc = NSC_QUERY_ESTORE;
    }
    if (rc) {
        free(*ans);
        *ans = NULL;
    }
    return rc;
}

int nsc_chanswer_literal(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    out[n++] = '\'';
    for (; *s && n + 4 < cap; s++) {
        if (*s == '\'' || *s == '\\')
            out[n++] = '\\';
        out[n++] = *s;
    }
    out[n++] = '\'';
    out[n] = 0;
    return *s ? -1 : 0;
}


/* ---- RowBinary values ---- */

uint64_t nsc_chanswer_le(nsc_chanswer *a, size_t width)
{
    const uint8_t *p = nsc_rtake(&a->r, width);
    return p ? nsc_get_le(p, width) : 0;
}

const uint8_t *nsc_chanswer_bytes(nsc_chanswer *a, size_t *len)
{
    const uint8_t *s = a->r.bad ? NULL : nsc_ch_take_string(&a->r.p, a->r.end, len);
    if (!s) {
        a->r.bad = 1;
        *len = 0;
    }
    return s;
}

int nsc_chanswer_at_end(const nsc_chanswer *a) { return a->r.bad || a->r.p == a->r.end; }

void nsc_chanswer_text(nsc_chanswer *a, char *out, size_t cap)
{
    size_t n;
    const uint8_t *s = nsc_chanswer_bytes(a, &n);
    memset(out, 0, cap);
    if (s)
        memcpy(out, s, n < cap ? n : cap);
}
