/* query.c: parameter parsing and validation, and dispatch to the endpoints.
 * One parser serves the HTTP API and the CLI: a URL query string in,
 * a validated nsc_query or a one-line error out. */
#include "qint.h"
#include "query.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "busbw.h"

#define MAX_QS 4096
#define MAX_LIMIT 1000000u

typedef struct endpoint {
    const char *name;
    unsigned allowed;   /* QP_* bits */
    unsigned required;  /* QP_COMM: runs on one communicator (the only one, when not named) */
    uint64_t limit;     /* default page size; 0: not paged */
    int (*run)(nsc_q_ctx *c);
    const char *content_type;
} endpoint;

#define QP_COMMON (QP_JOB | QP_FORMAT)
#define QP_WINDOW (QP_T0 | QP_T1)
static const endpoint endpoints[Q_NENDPOINTS] = {
    [Q_COMMS] = {"comms", QP_COMMON | QP_COMM, 0, 0, nsc_q_comms, "application/json"},
    [Q_TIMELINE] = {"timeline", QP_COMMON | QP_COMM | QP_CLOCK | QP_RANK | QP_WINDOW | QP_TYPE | QP_LIMIT |
                                    QP_CURSOR | QP_STATES, QP_COMM, 100000, nsc_q_timeline,
                    "application/x-ndjson"},
    [Q_COLLECTIVES] = {"collectives", QP_COMMON | QP_COMM | QP_CLOCK | QP_RANK | QP_WINDOW | QP_FUNC |
                                          QP_SEQ | QP_LIMIT | QP_CURSOR, QP_COMM, 1000,
                       nsc_q_collectives, "application/x-ndjson"},
    [Q_TOPOLOGY] = {"topology", QP_COMMON | QP_COMM | QP_CLOCK | QP_WINDOW, QP_COMM, 0, nsc_q_topology,
                    "application/json"},
    [Q_STATS] = {"stats", QP_COMMON | QP_COMM | QP_CLOCK | QP_RANK | QP_WINDOW | QP_FUNC | QP_SEQ, QP_COMM, 0, nsc_q_stats,
                 "application/json"},
    [Q_P2P] = {"p2p", QP_COMMON | QP_COMM | QP_CLOCK | QP_WINDOW | QP_SETTLE_LAG, QP_COMM, 0, nsc_q_p2p, "application/json"},
    [Q_LEDGER] = {"ledger", QP_COMMON | QP_COMM | QP_CLOCK | QP_RANK | QP_SEQ | QP_LIMIT | QP_CURSOR, QP_COMM, 1000,
                  nsc_q_ledger, "application/x-ndjson"},
};

static const struct {
    const char *name;
    unsigned bit;
} params[] = {{"job", QP_JOB},       {"comm", QP_COMM},   {"rank", QP_RANK},
              {"t0_ns", QP_T0},      {"t1_ns", QP_T1},    {"func", QP_FUNC},
              {"seq", QP_SEQ},       {"type", QP_TYPE},   {"limit", QP_LIMIT},
              {"cursor", QP_CURSOR}, {"format", QP_FORMAT}, {"states", QP_STATES},
              {"clock", QP_CLOCK},   {"settle_lag_ns", QP_SETTLE_LAG}};

/* src for an error message: non-printable bytes and quotes become '?',
 * and a long value is cut with "...". */
static void printable(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src[i] && i < cap - 4; i++)
        dst[i] = isprint((unsigned char)src[i]) && src[i] != '"' ? src[i] : '?';
    if (src[i])
        memcpy(dst + i, "...", 3), i += 3;
    dst[i] = 0;
}

static int perr(char *err, size_t cap, const char *name, const char *why, const char *value)
{
    char sname[24], svalue[48];
    printable(sname, sizeof sname, name);
    if (value) {
        printable(svalue, sizeof svalue, value);
        snprintf(err, cap, "%s: %s: \"%s\"", sname, why, svalue);
    } else {
        snprintf(err, cap, "%s: %s", sname, why);
    }
    return NSC_QUERY_EPARAM;
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = tolower(ch);
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* Percent-decode s[0..n) into out (cap bytes, NUL-terminated). */
static int url_decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '+') {
            ch = ' ';
        } else if (ch == '%') {
            int hi = i + 2 < n ? hexval((unsigned char)s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return -1;
            ch = hi * 16 + lo;
            i += 2;
        }
        if (ch == 0 || k + 1 >= cap)
            return -1;
        out[k++] = (char)ch;
    }
    out[k] = 0;
    return 0;
}

/* A decimal unsigned integer: digits only, no sign, no overflow. */
static int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 0;
}

/* "N" or "N-M" with N <= M, each within max; the '-' splits once. */
static int parse_span(char *s, uint64_t max, uint64_t *lo, uint64_t *hi)
{
    char *dash = strchr(s, '-');
    if (dash)
        *dash = 0;
    int rc = parse_u64(s, lo) || (dash ? parse_u64(dash + 1, hi) : (*hi = *lo, 0)) ? -1 : 0;
    if (dash)
        *dash = '-';
    return rc || *lo > *hi || *hi > max ? -1 : 0;
}

static int parse_ranks(nsc_query *q, char *v, char *err, size_t cap)
{
    char *save = NULL;
    q->nranges = 0;
    if (!*v || v[strlen(v) - 1] == ',')
        return perr(err, cap, "rank", "expected ranks like 0,2,4-7", v);
    for (char *tok = strtok_r(v, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        uint64_t lo, hi;
        if (parse_span(tok, INT32_MAX, &lo, &hi))
            return perr(err, cap, "rank", "expected ranks like 0,2,4-7", tok);
        if (q->nranges == Q_MAX_RANGES)
            return perr(err, cap, "rank", "more than 64 ranges", NULL);
        q->ranks[q->nranges++] = (nsc_q_range){(int32_t)lo, (int32_t)hi};
    }
    return 0;
}

static int parse_comm(nsc_query *q, const char *v, char *err, size_t cap)
{
    if (strncasecmp(v, "0x", 2) == 0) {
        size_t n = strlen(v + 2);
        if (n == 0 || n > 16 || strspn(v + 2, "0123456789abcdefABCDEF") != n)
            return perr(err, cap, "comm", "expected 0x and 1 to 16 hex digits, or a name", v);
    } else if (!*v || strlen(v) >= sizeof q->comm) {
        return perr(err, cap, "comm", "expected 0x and 1 to 16 hex digits, or a name", v);
    }
    snprintf(q->comm, sizeof q->comm, "%s", v);
    return 0;
}

static int parse_name(char *dst, size_t dcap, const char *name, const char *v, char *err,
                      size_t cap)
{
    if (!*v || strlen(v) >= dcap)
        return perr(err, cap, name, "expected 1 to 63 characters", v);
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

/* cursor: "a.b.c", three unsigned integers, as written by the endpoint. */
static int parse_cursor(nsc_query *q, const char *v, char *err, size_t cap)
{
    char buf[80];
    if (strlen(v) >= sizeof buf)
        return perr(err, cap, "cursor", "not a cursor this API wrote", v);
    memcpy(buf, v, strlen(v) + 1);
    char *p = buf;
    for (int i = 0; i < 3; i++) {
        char *dot = strchr(p, '.');
        if ((i < 2) != (dot != NULL))
            return perr(err, cap, "cursor", "not a cursor this API wrote", v);
        if (dot)
            *dot = 0;
        if (parse_u64(p, &q->cursor[i]))
            return perr(err, cap, "cursor", "not a cursor this API wrote", v);
        p = dot ? dot + 1 : p;
    }
    return 0;
}

static int parse_value(nsc_query *q, unsigned bit, char *v, char *err, size_t cap)
{
    uint64_t x, y;
    switch (bit) {
    case QP_JOB:
        return parse_name(q->job, sizeof q->job, "job", v, err, cap);
    case QP_COMM:
        return parse_comm(q, v, err, cap);
    case QP_RANK:
        return parse_ranks(q, v, err, cap);
    case QP_SETTLE_LAG:
        if (parse_u64(v, &q->settle_lag))
            return perr(err, cap, "settle_lag_ns", "not an unsigned integer", v);
        return 0;
    case QP_T0:
    case QP_T1:
        if (parse_u64(v, &x))
            return perr(err, cap, bit == QP_T0 ? "t0_ns" : "t1_ns", "not an unsigned integer", v);
        *(bit == QP_T0 ? &q->t0 : &q->t1) = x;
        return 0;
    case QP_FUNC:
        if (!nsc_func_known(v))
            return perr(err, cap, "func", "expected one of " NSC_FUNC_NAMES, v);
        return parse_name(q->func, sizeof q->func, "func", v, err, cap);
    case QP_SEQ:
        if (parse_span(v, UINT64_MAX, &x, &y))
            return perr(err, cap, "seq", "expected N or N-M with N <= M", v);
        q->seq_lo = x, q->seq_hi = y;
        return 0;
    case QP_TYPE:
        if (nsc_mask_parse(v, &q->types) || q->types == 0)
            return perr(err, cap, "type", "expected all or event types like coll,kernelch", v);
        return 0;
    case QP_LIMIT:
        if (parse_u64(v, &x) || x == 0 || x > MAX_LIMIT)
            return perr(err, cap, "limit", "expected 1 to 1000000", v);
        q->limit = x;
        return 0;
    case QP_CURSOR:
        return parse_cursor(q, v, err, cap);
    case QP_STATES:
        if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
            return perr(err, cap, "states", "expected 0 or 1", v);
        q->states = v[0] == '1';
        return 0;
    case QP_CLOCK:
        if (strcmp(v, "model") != 0 && strcmp(v, "causal") != 0)
            return perr(err, cap, "clock", "expected model or causal", v);
        q->causal = v[0] == 'c';
        return 0;
    default: /* QP_FORMAT */
        if (strcmp(v, "json") == 0)
            return 0;
        if (strcmp(v, "compact") == 0 && q->endpoint == Q_TIMELINE) {
            q->compact = 1;
            return 0;
        }
        return perr(err, cap, "format",
                    q->endpoint == Q_TIMELINE ? "expected json or compact" : "only json is served",
                    v);
    }
}

static int parse_pair(nsc_query *q, const endpoint *ep, const char *s, size_t n, char *err,
                      size_t cap)
{
    const char *eq = memchr(s, '=', n);
    char name[16], value[256];
    if (!eq || url_decode(s, (size_t)(eq - s), name, sizeof name))
        return perr(err, cap, "query", "expected name=value", NULL);
    if (url_decode(eq + 1, n - (size_t)(eq + 1 - s), value, sizeof value))
        return perr(err, cap, name, "bad percent-encoding, NUL, or longer than 255 bytes", NULL);
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        if (strcmp(name, params[i].name) != 0)
            continue;
        if (!(ep->allowed & params[i].bit))
            return perr(err, cap, name, "not a parameter of this endpoint", NULL);
        if (q->has & params[i].bit)
            return perr(err, cap, name, "given twice", NULL);
        q->has |= params[i].bit;
        return parse_value(q, params[i].bit, value, err, cap);
    }
    return perr(err, cap, name, "unknown parameter", NULL);
}

static int parse_all(nsc_query *q, const endpoint *ep, const char *qs, char *err, size_t cap)
{
    size_t len = strlen(qs);
    if (len > MAX_QS)
        return perr(err, cap, "query", "longer than 4096 bytes", NULL);
    for (const char *p = qs; *p;) {
        const char *amp = strchr(p, '&');
        size_t n = amp ? (size_t)(amp - p) : strlen(p);
        int rc = n ? parse_pair(q, ep, p, n, err, cap) : 0;
        if (rc)
            return rc;
        p += n + (amp != NULL);
    }
    if (q->t0 > q->t1)
        return perr(err, cap, "t0_ns", "after t1_ns", NULL);
    return 0;
}

int nsc_query_parse(const char *name, const char *qs, nsc_query **out, char *err, size_t errcap)
{
    int e = 0;
    while (e < Q_NENDPOINTS && (!name || strcmp(name, endpoints[e].name) != 0))
        e++;
    if (e == Q_NENDPOINTS) {
        char shown[48];
        printable(shown, sizeof shown, name ? name : "");
        snprintf(err, errcap, "no endpoint \"%s\"", shown);
        return NSC_QUERY_EUNKNOWN;
    }
    nsc_query *q = calloc(1, sizeof *q);
    if (!q) {
        snprintf(err, errcap, "out of memory");
        return NSC_QUERY_ESTORE;
    }
    q->endpoint = e;
    q->t1 = UINT64_MAX;
    q->seq_hi = UINT64_MAX;
    q->types = NSC_MASK_ALL;
    q->limit = endpoints[e].limit;
    int rc = parse_all(q, &endpoints[e], qs ? qs : "", err, errcap);
    if (!(q->has & QP_STATES))
        q->states = !q->compact;
    if (rc) {
        free(q);
        return rc;
    }
    *out = q;
    return 0;
}

int nsc_query_run(const nsc_query *q, nsc_store_reader *rd, nsc_query_write_fn fn, void *arg,
                  char *err, size_t errcap)
{
    nsc_q_out *out = malloc(sizeof *out);
    nsc_q_ctx c;
    if (!out) {
        snprintf(err, errcap, "out of memory");
        return NSC_QUERY_ESTORE;
    }
    out->fn = fn;
    out->arg = arg;
    out->err = 0;
    out->len = 0;
    int rc = nsc_q_ctx_init(&c, q, rd, out, err, errcap);
    if (!rc)
        rc = nsc_q_resolve_job(&c);
    if (!rc && (endpoints[q->endpoint].required & QP_COMM))
        rc = nsc_q_resolve_comm(&c);
    if (!rc && (endpoints[q->endpoint].required & QP_COMM) && q->causal)
        rc = nsc_q_cause(&c);
    if (!rc)
        rc = endpoints[q->endpoint].run(&c);
    if (!rc)
        rc = nsc_q_flush(out);
    if (rc == NSC_QUERY_EWRITE)
        snprintf(err, errcap, "%s", q->stop && atomic_load(q->stop) ? "stopped" : "the output was closed");
    nsc_q_ctx_free(&c);
    free(out);
    return rc;
}

const char *nsc_query_content_type(const nsc_query *q)
{
    return endpoints[q->endpoint].content_type;
}

const char *nsc_query_name(const nsc_query *q)
{
    return endpoints[q->endpoint].name;
}

int nsc_query_ledger_scope(const nsc_query *q, nsc_query_scope *out)
{
    int reads_ledger = q->endpoint == Q_LEDGER || q->endpoint == Q_COLLECTIVES || q->endpoint == Q_STATS;
    memset(out, 0, sizeof *out);
    if (!reads_ledger || !(q->has & QP_JOB) || !(q->has & QP_COMM) || nsc_q_comm_id(q, &out->comm))
        return -1;
    out->job = q->job;
    out->seq_lo = q->seq_lo;
    out->seq_hi = q->seq_hi;
    /* func=: its previous kernel end is its function's, which the scope's
     * rows (process-local string ids) cannot pick */
    out->t0 = q->endpoint != Q_LEDGER && !q->causal && !(q->has & QP_FUNC) ? q->t0 : 0;
    out->t1 = q->t1;
    nsc_q_rank_window(q, &out->rank_lo, &out->rank_hi);
    return 0;
}

int nsc_query_event_scope(const nsc_query *q, nsc_query_scope *out)
{
    int windowed = q->endpoint == Q_TIMELINE && (q->has & (QP_T0 | QP_T1)) && !nsc_query_reads_ledger(q);
    int p2p = q->endpoint == Q_P2P && !nsc_query_reads_ledger(q);
    if (!(windowed || p2p || q->endpoint == Q_COMMS) || !(q->has & QP_JOB) || !q->job[0])
        return -1;
    memset(out, 0, sizeof *out);
    out->job = q->job;
    out->t0 = q->t0;
    out->t1 = q->t1;
    out->events = 1;
    out->defs = q->endpoint == Q_COMMS;
    out->p2p = p2p;
    /* a communicator named otherwise than by id is found by the query */
    if (!(q->has & QP_COMM) || nsc_q_comm_id(q, &out->comm))
        out->comm = 0;
    nsc_q_rank_window(q, &out->rank_lo, &out->rank_hi);
    return 0;
}

int nsc_query_reads_ledger(const nsc_query *q)
{
    return q->causal || (q->endpoint != Q_TIMELINE && q->endpoint != Q_P2P);
}

const char *nsc_query_job(const nsc_query *q)
{
    return q->has & QP_JOB ? q->job : NULL;
}

int nsc_query_first_window(const nsc_query *q, uint64_t *t0, uint64_t *t1)
{
    if (!(q->has & QP_JOB) || !q->job[0] || (q->has & QP_CURSOR))
        return -1;
    *t0 = q->t0;
    *t1 = q->t1;
    return 0;
}

int nsc_query_http_status(int err)
{
    switch (err) {
    case NSC_QUERY_OK:
        return 200;
    case NSC_QUERY_EPARAM:
        return 400;
    case NSC_QUERY_EUNKNOWN:
    case NSC_QUERY_ENOTFOUND:
        return 404;
    default:
        return 500;
    }
}

int nsc_query_set_detail(nsc_query *q, const char *json)
{
    free(q->detail);
    q->detail = strdup(json);
    return q->detail ? 0 : -1;
}

void nsc_query_set_stop(nsc_query *q, const atomic_int *stop)
{
    q->stop = stop;
}

void nsc_query_free(nsc_query *q)
{
    if (q)
        free(q->detail);
    free(q);
}
