/* chread.c: ClickHouse's rows back into sections of batches (see chread.h).
 *
 * Over 700 lines because the whole and the scoped loads (with a time
 * window's bounds on each host's clock, its seqs by the ledger marks, a
 * timeline window's sections by the event marks), the ledger's two reads
 * and the fingerprint share one source of answers and one reader of rows
 * by batch identity, which a split would have to export. */
#include "chread.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chanswer.h"
#include "chevents.h"
#include "chledger.h"
#include "chrows.h"
#include "grow.h"
#include "ledger.h"
#include "ledger_pack.h"
#include "mono.h"
#include "query.h"

#define SQL_MAX 32768
/* A scope's rows ("FROM ledger_recs WHERE ..."): its time window on each
 * host's clock (STARTS_MAX each: start twice, end once) takes most of it. */
#define STARTS_MAX 4096
#define SCOPE_MAX (3 * STARTS_MAX + 2048)
#define IDENT "agent, epoch, batch_seq, section"
/* ORDER BY this: rows of one identity once, without FINAL */
#define ONCE_EACH IDENT " LIMIT 1 BY " IDENT

typedef struct source {
    const nsc_chconn *conn;
    const char *server, *suffix, *db;
    const char *tmpdir;
    uint64_t *read;  /* the answers' bytes are added here, when given */
    char job[160];   /* the job as an SQL string literal */
} source;

/* The answer of sql on src's server. */
static int fetch(const source *src, const char *sql, const char *what, nsc_chanswer *a, char *err, size_t errcap)
{
    int rc = nsc_chanswer_fetch(src->conn, src->server, src->tmpdir, sql, what, a, err, errcap);
    if (src->read)
        *src->read += a->len;
    return rc;
}

/* ---- the rows of one table, a section at a time ---- */

typedef struct ident {
    const uint8_t *agent;
    size_t agent_len;
    uint64_t epoch, batch_seq;
    uint32_t section;
} ident;

typedef struct rows {
    nsc_chanswer a;
    ident at;  /* the next row's section */
    int more;  /* a next row is there */
} rows;

static void next_row(rows *r)
{
    r->more = !nsc_chanswer_at_end(&r->a);
    if (!r->more)
        return;
    r->at.agent = nsc_chanswer_bytes(&r->a, &r->at.agent_len);
    r->at.epoch = nsc_chanswer_le(&r->a, 8);
    r->at.batch_seq = nsc_chanswer_le(&r->a, 8);
    r->at.section = (uint32_t)nsc_chanswer_le(&r->a, 4);
    r->more = !r->a.r.bad;
}

static int ident_cmp(const ident *x, const ident *y)
{
    size_t n = x->agent_len < y->agent_len ? x->agent_len : y->agent_len;
    int c = n ? memcmp(x->agent, y->agent, n) : 0;
    if (c || x->agent_len != y->agent_len)
        return c ? c : x->agent_len < y->agent_len ? -1 : 1;
    if (x->epoch != y->epoch)
        return x->epoch < y->epoch ? -1 : 1;
    if (x->batch_seq != y->batch_seq)
        return x->batch_seq < y->batch_seq ? -1 : 1;
    return x->section < y->section ? -1 : x->section > y->section;
}

/* ---- the sections of one transaction ---- */

typedef struct section {
    nsc_proc proc;
    size_t first[5], count[5];  /* per kind (K_*), into the chunk's arrays */
} section;

enum { K_EVENTS, K_STATES, K_COMPL, K_CTXS, K_STRS, K_N };

typedef struct chunk {
    nsc_event *ev;
    nsc_state_rec *st;
    nsc_completion *cp;
    nsc_ctx_def *cx;
    nsc_str_def *sd;
    size_t n[K_N], cap[K_N];
    section *secs;
    size_t nsecs, secs_cap;
} chunk;

static const size_t kind_size[K_N] = {sizeof(nsc_event), sizeof(nsc_state_rec), sizeof(nsc_completion),
                                      sizeof(nsc_ctx_def), sizeof(nsc_str_def)};

static void *kind_array(chunk *c, int k)
{
    void *arrays[K_N] = {&c->ev, &c->st, &c->cp, &c->cx, &c->sd};
    return arrays[k];
}

/* Record i of kind k in the chunk. */
static const void *record_at(chunk *c, int k, size_t i)
{
    const uint8_t *base;
    memcpy(&base, kind_array(c, k), sizeof base);
    return base + kind_size[k] * i;
}

/* Room for one more record of kind k: its slot, or NULL. */
static void *slot(chunk *c, int k)
{
    void *arrp = kind_array(c, k);
    if (nsc_grow(arrp, c->n[k], &c->cap[k], kind_size[k], 256))
        return NULL;
    uint8_t *base;
    memcpy(&base, arrp, sizeof base);
    return base + kind_size[k] * c->n[k]++;
}

static void chunk_free(chunk *c)
{
    free(c->ev), free(c->st), free(c->cp), free(c->cx), free(c->sd), free(c->secs);
}

/* Put the chunk's sections into dst in one transaction, and empty it. The
 * arrays stay put until commit returns (it may replay the puts). */
static int chunk_put(chunk *c, nsc_store *dst, char *err, size_t errcap)
{
    int rc = c->nsecs ? nsc_store_begin(dst, nsc_mono_ns()) : 0;
    for (size_t i = 0; !rc && i < c->nsecs; i++) {
        const section *s = &c->secs[i];
        /* a kind no section of the chunk has is a NULL array: no offset into it */
#define AT(arr, k) (s->count[k] ? (arr) + s->first[k] : NULL), s->count[k]
        nsc_store_batch b = {&s->proc, AT(c->cx, K_CTXS), AT(c->sd, K_STRS), AT(c->ev, K_EVENTS),
                             AT(c->st, K_STATES), AT(c->cp, K_COMPL)};
#undef AT
        rc = nsc_store_put(dst, &b);
    }
    if (c->nsecs)
        rc = rc ? (nsc_store_abort(dst), rc) : nsc_store_commit(dst);
    memset(c->n, 0, sizeof c->n);
    c->nsecs = 0;
    if (rc)
        snprintf(err, errcap, "the query's store: %s", nsc_store_strerror(rc));
    return rc ? NSC_QUERY_ESTORE : 0;
}

/* One record of kind k from its row's values into the chunk; 0 or -1. */
static int take_record(chunk *c, int k, nsc_chanswer *a)
{
    void *at = slot(c, k);
    if (!at)
        return -1;
    memset(at, 0, kind_size[k]);
    if (k == K_EVENTS) {
        size_t used = nsc_ch_event_read(a->r.p, a->r.bad ? 0 : (size_t)(a->r.end - a->r.p), at);
        a->r.bad |= !nsc_rtake(&a->r, used ? used : SIZE_MAX);
    } else if (k == K_STATES) {
        nsc_state_rec *s = at;
        s->id = nsc_chanswer_le(a, 8), s->ts_ns = nsc_chanswer_le(a, 8), s->arg = nsc_chanswer_le(a, 8);
        s->tid = (uint32_t)nsc_chanswer_le(a, 4);
        s->state = (uint8_t)nsc_chanswer_le(a, 1);
    } else if (k == K_COMPL) {
        nsc_completion *p = at;
        p->id = nsc_chanswer_le(a, 8), p->ts_ns = nsc_chanswer_le(a, 8);
    } else if (k == K_CTXS) {
        nsc_ctx_def *x = at;
        x->index = (uint16_t)nsc_chanswer_le(a, 2), x->comm_id = nsc_chanswer_le(a, 8);
        x->nnodes = (int32_t)nsc_chanswer_le(a, 4), x->nranks = (int32_t)nsc_chanswer_le(a, 4);
        x->rank = (int32_t)nsc_chanswer_le(a, 4), x->api_version = (int32_t)nsc_chanswer_le(a, 4);
        nsc_chanswer_text(a, x->name, sizeof x->name);
    } else {
        nsc_str_def *s = at;
        s->id = (nsc_str)nsc_chanswer_le(a, 2);
        nsc_chanswer_text(a, s->text, sizeof s->text);
    }
    return a->r.bad ? -1 : 0;
}

/* The records of kind k whose section is sec: rows of sections before it
 * (a section whose batches row is missing: an insert that failed part way,
 * sent again under the same identity) are passed over. */
static int take_section(chunk *c, section *s, int k, rows *r, const ident *sec)
{
    s->first[k] = c->n[k];
    while (r->more && ident_cmp(&r->at, sec) < 0) {
        int rc = take_record(c, k, &r->a);  /* parsed to reach the next row, then dropped */
        c->n[k]--;
        if (rc)
            return -1;
        next_row(r);
    }
    while (r->more && ident_cmp(&r->at, sec) == 0) {
        if (take_record(c, k, &r->a))
            return -1;
        next_row(r);
    }
    s->count[k] = c->n[k] - s->first[k];
    return 0;
}

/* ---- a job from one source ---- */

/* The value columns of the events table: its columns from type on, before
 * the batch identity (chevents.h), names only. */
static void event_value_names(char *out, size_t cap)
{
    const char *cols = nsc_ch_event_columns();
    const char *from = strstr(cols, "type UInt8"), *to = strstr(cols, ", " NSC_CH_ORIGIN_COLUMNS);
    size_t n = 0;
    out[0] = 0;
    for (const char *p = from; p && p < to && n + 64 < cap;) {
        size_t w = strcspn(p, " ");
        n += (size_t)snprintf(out + n, cap - n, "%s%.*s", n ? ", " : "", (int)w, p);
        p = strstr(p, ", ");
        p = p && p < to ? p + 2 : NULL;
    }
}

/* Each kind's table, the columns of its records and their order; a table
 * with a row per section (its fields Arrays, chrows.h) gives a row per
 * record through ARRAY JOIN, numbered in the section's order as idx. The
 * definitions come by process (host and pid first: take_defs). */
static const struct {
    const char *table, *columns, *join, *order;
} kinds[K_N] = {{"events", NULL, "", IDENT ", idx"},
                {"states",
                 "s_id, " NSC_CH_VALUE("ts", "s_ts") ", " NSC_CH_VALUE("arg", "s_arg")
                 ", s_tid, s_state",
                 " ARRAY JOIN id AS s_id, " NSC_CH_ARRAY("ts") " AS s_ts, " NSC_CH_ARRAY("arg")
                 " AS s_arg, tid AS s_tid, state AS s_state, arrayEnumerate(tid) AS idx", IDENT ", idx"},
                {"completions", "c_id, " NSC_CH_VALUE("ts", "c_ts"),
                 " ARRAY JOIN id AS c_id, " NSC_CH_ARRAY("ts") " AS c_ts, arrayEnumerate(id) AS idx", IDENT ", idx"},
                {"contexts", "host, pid, ctx, comm_id, nnodes, nranks, rank, api_version, name", "",
                 "host, pid, " IDENT ", idx"},
                {"strings", "host, pid, id, text", "", "host, pid, " IDENT ", idx"}};

/* The job's rows of table (final: " FINAL" or ""), only those passing
 * prewhere (" PREWHERE ...", read before the other columns; "" for all)
 * and where (" AND ..." after the job; ""). */
static int fetch_rows(const source *src, const char *table, const char *final, const char *columns, const char *join,
                      const char *prewhere, const char *where, const char *order, nsc_chanswer *a, char *err,
                      size_t errcap)
{
    char sql[SQL_MAX];
    int n = snprintf(sql, sizeof sql,
                     "SELECT " IDENT ", %s FROM %s.%s%s%s%s%s WHERE job = %s%s ORDER BY %s FORMAT RowBinary", columns,
                     src->db, table, src->suffix, final, join, prewhere, src->job, where, order);
    if (n >= (int)sizeof sql) {
        snprintf(err, errcap, "clickhouse: the SELECT of %s is too long", table);
        return NSC_QUERY_ESTORE;
    }
    return fetch(src, sql, table, a, err, errcap);
}

/* Each row of the job's in table once (FINAL). */
static int fetch_table(const source *src, const char *table, const char *columns, const char *join, const char *order,
                       nsc_chanswer *a, char *err, size_t errcap)
{
    return fetch_rows(src, table, " FINAL", columns, join, "", "", order, a, err, errcap);
}

/* A batches row's process (after its identity). */
static void take_proc(nsc_chanswer *a, const char *job, nsc_proc *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->job, sizeof p->job, "%s", job);
    nsc_chanswer_text(a, p->host, sizeof p->host);
    p->pid = (uint32_t)nsc_chanswer_le(a, 4);
    p->local_rank = (int32_t)nsc_chanswer_le(a, 4);
    p->gpu = (int32_t)nsc_chanswer_le(a, 4);
}

/* ---- each process's definitions ---- */

/* The contexts and strings tables keep one definition of each of a
 * process's indexes (they fold by process and index), in the section that
 * last sent it, though a plugin sends them again every 10 s: put in that
 * section, the events before it would name contexts and strings not yet
 * defined. A load gives all of a process's definitions to the first of its
 * sections it puts instead, in the order their sections came: the store
 * numbers strings in the order it meets them, as it did at ingest unless
 * a string a process met late was new to the others too, or was sent
 * again in another order (docs/clickhouse-read.md). */
typedef struct dproc {
    char host[64];
    uint32_t pid;
    int given;                  /* to a section of this load */
    size_t first[K_N], count[K_N]; /* K_CTXS and K_STRS: into the defs' chunk */
} dproc;

typedef struct defs {
    dproc *p;  /* by host and pid */
    size_t np, pcap;
    chunk all; /* the records, a process's of each kind together */
} defs;

static int dproc_cmp(const void *a, const void *b)
{
    const dproc *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    return c ? c : (x->pid > y->pid) - (x->pid < y->pid);
}

static dproc *dproc_find(const defs *d, const char *host, uint32_t pid)
{
    dproc key = {.pid = pid};
    snprintf(key.host, sizeof key.host, "%s", host);
    return d->np ? bsearch(&key, d->p, d->np, sizeof *d->p, dproc_cmp) : NULL;
}

/* A new process in d, in its place by host and pid: at the end but for
 * one with strings and no context. NULL: out of memory. */
static dproc *dproc_add(defs *d, const char *host, uint32_t pid)
{
    if (nsc_grow(&d->p, d->np, &d->pcap, sizeof *d->p, 64))
        return NULL;
    dproc key = {.pid = pid};
    snprintf(key.host, sizeof key.host, "%s", host);
    size_t at = d->np;
    while (at > 0 && dproc_cmp(&key, &d->p[at - 1]) < 0)
        at--;
    memmove(&d->p[at + 1], &d->p[at], (d->np++ - at) * sizeof *d->p);
    d->p[at] = key;
    return &d->p[at];
}

/* The rows of kind k (K_CTXS or K_STRS), a process's together (ordered by
 * host and pid), into d; d->p stays sorted. 0, or -1 (memory, a row that
 * does not decode, or a process's rows apart). */
static int take_defs(rows *r, int k, defs *d)
{
    dproc *p = NULL;
    for (; r->more; next_row(r)) {
        char host[64];
        nsc_chanswer_text(&r->a, host, sizeof host);
        uint32_t pid = (uint32_t)nsc_chanswer_le(&r->a, 4);
        if (!p || p->pid != pid || strcmp(p->host, host) != 0) {
            if (!(p = dproc_find(d, host, pid))) {
                if (!(p = dproc_add(d, host, pid)))
                    return -1;
            } else if (p->count[k]) {
                return -1;  /* not a process's together: not the order asked for */
            }
            p->first[k] = d->all.n[k];
        }
        if (take_record(&d->all, k, &r->a))
            return -1;
        p->count[k]++;
    }
    return r->a.r.bad ? -1 : 0;
}

/* Section s's definitions: all of its process's, when it is the first of
 * the process's sections the load puts; none otherwise. 0, or -1 (memory). */
static int give_defs(defs *d, chunk *c, section *s)
{
    dproc *p = dproc_find(d, s->proc.host, s->proc.pid);
    for (int k = K_CTXS; k <= K_STRS; k++) {
        s->first[k] = c->n[k], s->count[k] = 0;
        for (size_t i = 0; p && !p->given && i < p->count[k]; i++, s->count[k]++) {
            void *at = slot(c, k);
            if (!at)
                return -1;
            memcpy(at, record_at(&d->all, k, p->first[k] + i), kind_size[k]);
        }
    }
    if (p)
        p->given = 1;
    return 0;
}

/* Merge the answers: one section per batches row, its records from the
 * other tables, the definitions from d; a chunk put whenever it holds
 * NSC_CHREAD_CHUNK records. */
static int merge(rows *anchor, rows r[K_N], defs *d, const char *job, nsc_store *dst, char *err, size_t errcap)
{
    chunk c;
    memset(&c, 0, sizeof c);
    int rc = 0;
    while (!rc && anchor->more) {
        ident sec = anchor->at;
        if (nsc_grow(&c.secs, c.nsecs, &c.secs_cap, sizeof *c.secs, 64)) {
            snprintf(err, errcap, "out of memory");
            rc = NSC_QUERY_ESTORE;
            break;
        }
        section *s = &c.secs[c.nsecs++];
        take_proc(&anchor->a, job, &s->proc);
        for (int k = 0; k < K_CTXS && !rc; k++)
            if (take_section(&c, s, k, &r[k], &sec)) {
                snprintf(err, errcap, "clickhouse: the %s rows do not decode", kinds[k].table);
                rc = NSC_QUERY_ESTORE;
            }
        if (!rc && give_defs(d, &c, s)) {
            snprintf(err, errcap, "out of memory");
            rc = NSC_QUERY_ESTORE;
        }
        next_row(anchor);
        if (!rc && anchor->a.r.bad) {
            snprintf(err, errcap, "clickhouse: the batches rows do not decode");
            rc = NSC_QUERY_ESTORE;
        }
        if (!rc && (!anchor->more || c.n[K_EVENTS] + c.n[K_STATES] + c.n[K_COMPL] >= NSC_CHREAD_CHUNK))
            rc = chunk_put(&c, dst, err, errcap);
    }
    chunk_free(&c);
    return rc;
}

/* The answers fetched (rc 0: every one) merged into dst, then freed. */
static int merge_fetched(int rc, rows *anchor, rows r[K_N], const char *job, nsc_store *dst, char *err,
                         size_t errcap)
{
    defs d;
    memset(&d, 0, sizeof d);
    if (!rc) {
        next_row(anchor);
        for (int k = 0; k < K_N; k++)
            next_row(&r[k]);
        for (int k = K_CTXS; !rc && k <= K_STRS; k++)
            if (take_defs(&r[k], k, &d)) {
                snprintf(err, errcap, "clickhouse: the %s rows do not decode", kinds[k].table);
                rc = NSC_QUERY_ESTORE;
            }
        rc = rc ? rc : merge(anchor, r, &d, job, dst, err, errcap);
    }
    chunk_free(&d.all);
    free(d.p);
    nsc_chanswer_free(&anchor->a);
    for (int k = 0; k < K_N; k++)
        nsc_chanswer_free(&r[k].a);
    return rc;
}

/* The job's sections on src into dst; with defs_only, only the sections
 * that define contexts or strings, without their events, states and
 * completions (what a ledger query reads besides the ledger). */
static int read_source(const source *src, const char *job, int defs_only, nsc_store *dst, char *err, size_t errcap)
{
    rows anchor, r[K_N];
    memset(&anchor, 0, sizeof anchor);
    memset(r, 0, sizeof r);
    char values[2048], defs[1024] = "";
    event_value_names(values, sizeof values);
    if (defs_only)
        snprintf(defs, sizeof defs,
                 " PREWHERE (" IDENT ") GLOBAL IN (SELECT " IDENT " FROM %s.contexts%s WHERE job = %s"
                 " UNION ALL SELECT " IDENT " FROM %s.strings%s WHERE job = %s)",
                 src->db, src->suffix, src->job, src->db, src->suffix, src->job);
    /* defs_only: each section once by ONCE_EACH, not FINAL (read_ledger) */
    int rc = defs_only ? fetch_rows(src, "batches", "", "host, pid, local_rank, gpu", "", defs, "", ONCE_EACH, &anchor.a,
                                    err, errcap)
                       : fetch_table(src, "batches", "host, pid, local_rank, gpu", "", IDENT, &anchor.a, err, errcap);
    for (int k = defs_only ? K_CTXS : 0; !rc && k < K_N; k++)
        rc = fetch_table(src, kinds[k].table, kinds[k].columns ? kinds[k].columns : values, kinds[k].join,
                         kinds[k].order, &r[k].a, err, errcap);
    return merge_fetched(rc, &anchor, r, job, dst, err, errcap);
}

/* ---- loading a query's store ---- */

/* dst's open transaction committed, or aborted after rc: 0, or
 * NSC_QUERY_ESTORE with err set. */
static int end_load(nsc_store *dst, int rc, char *err, size_t errcap)
{
    rc = rc ? (nsc_store_abort(dst), rc) : nsc_store_commit(dst);
    if (rc)
        snprintf(err, errcap, "the query's store: %s", nsc_store_strerror(rc));
    return rc ? NSC_QUERY_ESTORE : 0;
}

/* ---- ledger ---- */

/* One process's ledger batch b put into dst as the LMDB collector puts it,
 * in a transaction of its own. */
static int put_ledger(nsc_proc *p, const nsc_ledger_batch *b, nsc_store *dst, char *err, size_t errcap)
{
    nsc_store_ledger l = {p, b, {0}};
    int rc = nsc_store_begin(dst, nsc_mono_ns());
    if (!rc)
        rc = nsc_store_put_ledger(dst, &l);
    return end_load(dst, rc, err, errcap);
}

/* A ledger row's process (after its identity: host, pid). */
static void take_ledger_proc(nsc_chanswer *a, nsc_proc *p)
{
    nsc_chanswer_text(a, p->host, sizeof p->host);
    p->pid = (uint32_t)nsc_chanswer_le(a, 4);
}

/* The ledger rows (after their identity: host, pid, data) into dst, each
 * batch decoded and put as the LMDB collector puts it, and committed (its
 * decoded records end with it). */
static int put_ledgers(rows *r, const char *job, nsc_store *dst, char *err, size_t errcap)
{
    nsc_proc p = {.local_rank = -1, .gpu = -1};
    snprintf(p.job, sizeof p.job, "%s", job);
    int rc = 0;
    for (next_row(r); !rc && r->more; next_row(r)) {
        nsc_ledger_batch b;
        size_t n;
        take_ledger_proc(&r->a, &p);
        const uint8_t *data = nsc_chanswer_bytes(&r->a, &n);
        if (!data || nsc_ledger_decode(data, n, NULL, &b)) {
            snprintf(err, errcap, "clickhouse: a stored ledger batch does not decode");
            return NSC_QUERY_ESTORE;
        }
        rc = put_ledger(&p, &b, dst, err, errcap);
        nsc_ledger_release(&b);
    }
    if (!rc && r->a.r.bad) {
        snprintf(err, errcap, "clickhouse: the ledger rows do not decode");
        return NSC_QUERY_ESTORE;
    }
    return rc;
}

/* A scope's time window on each row's host clock (SQL over the row's
 * host): from its t0; with a t1, till the latest enqueue on each host of a
 * seq enqueued in [t0, t1] there (a rank may join a collective of the
 * window any time later; no other seq's records are what it answers);
 * till[0] 0: no end. */
typedef struct span {
    char from[STARTS_MAX], till[STARTS_MAX];
    /* " AND seq BETWEEN A AND B" by the marks (marks_span): seqs the
     * window's records and their previous collectives lie among (seqs),
     * and those previous collectives (back) */
    char seqs[64], back[64];
} span;

/* The records of scope s on src: "FROM ledger_recs WHERE ..." into out;
 * with unknown, instead those of its seqs whose communicator their agent
 * did not know (comm_id 0), whatever their rank. Each a range of the
 * table's key (an OR of the two would read the whole job's rows). With a
 * time window w (scope_span), only each process's records enqueued in it
 * (unknown: from its start on), and its last collective before it whose
 * kernel ended (colls.c's rule: GPU times, every channel's kernel ended),
 * which holds the previous kernel end of its first. */
static void scope_rows(const source *src, const nsc_query_scope *s, int unknown, const span *w, char *out,
                       size_t cap)
{
    char keys[512];
    int n = snprintf(keys, sizeof keys, "FROM %s.%s%s WHERE job = %s AND comm_id = %" PRIu64 " AND seq BETWEEN %" PRIu64
                     " AND %" PRIu64, src->db, nsc_ch_def(NSC_CH_LEDGER_RECS).name, src->suffix, src->job,
                     unknown ? 0 : s->comm, s->seq_lo, s->seq_hi);
    if (!unknown && n > 0 && (size_t)n < sizeof keys)
        snprintf(keys + n, sizeof keys - (size_t)n, " AND rank BETWEEN %" PRId32 " AND %" PRId32, s->rank_lo,
                 s->rank_hi);
    if (!w) {
        snprintf(out, cap, "%s", keys);
        return;
    }
    int till = !unknown && w->till[0];
    snprintf(out, cap,
             "%s%s AND (enqueue_ns >= %s%s%s OR (host, pid, ctx, rank, seq) GLOBAL IN (SELECT host, pid, ctx, rank, "
             "argMax(seq, enqueue_ns) %s%s AND enqueue_ns < %s AND " NSC_CH_LEDGER_ENDED_SQL
             " GROUP BY host, pid, ctx, rank))",
             keys, w->seqs, w->from, till ? " AND enqueue_ns <= " : "", till ? w->till : "", keys, w->back, w->from,
             NSC_CH_LEDGER_ENDED_FLAGS);
}

/* The records of one ledger batch that a scope's rows hold, gathered. */
typedef struct lbatch {
    nsc_ledger_rec *recs;
    nsc_ledger_edge *edges, *one;  /* one: a record's, NSC_LPACK_MAX_EDGES */
    size_t nrecs, caprecs, nedges, capedges;
} lbatch;

/* The row's record (after its process) appended to lb: 0, or -1 when it
 * does not decode or memory runs out. Its edges go after the batch's
 * others; rec.edges stays non-NULL for a record whose edges were kept. */
static int take_ledger_rec(nsc_chanswer *a, lbatch *lb)
{
    nsc_ledger_rec rec;
    size_t used = a->r.bad ? 0 : nsc_ch_ledger_read(a->r.p, (size_t)(a->r.end - a->r.p), &rec, lb->one,
                                                    NSC_LPACK_MAX_EDGES);
    if (!nsc_rtake(&a->r, used ? used : SIZE_MAX) ||
        nsc_grow(&lb->recs, lb->nrecs, &lb->caprecs, sizeof *lb->recs, 256) ||
        (rec.edges && nsc_grow_to(&lb->edges, lb->nedges + rec.nedges, &lb->capedges, sizeof *lb->edges, 256)))
        return -1;
    if (rec.edges)
        memcpy(lb->edges + lb->nedges, rec.edges, rec.nedges * sizeof *rec.edges), lb->nedges += rec.nedges;
    lb->recs[lb->nrecs++] = rec;
    return 0;
}

/* lb's records as p's ledger batch into dst (each record's edges found
 * again in order), and lb emptied. */
static int put_lbatch(lbatch *lb, nsc_proc *p, nsc_store *dst, char *err, size_t errcap)
{
    for (size_t i = 0, e = 0; i < lb->nrecs; i++)
        if (lb->recs[i].edges)
            lb->recs[i].edges = lb->edges + e, e += lb->recs[i].nedges;
    nsc_ledger_batch b = {.pid = p->pid, .nrecs = (uint32_t)lb->nrecs, .recs = lb->recs};
    lb->nrecs = lb->nedges = 0;
    return put_ledger(p, &b, dst, err, errcap);
}

/* The ledger_recs rows (identity, host, pid, record) into dst, a batch of
 * those of one identity at a time. A record's strings are its process's
 * ids, which the process's sections define (read before). */
static int put_ledger_recs(rows *r, const char *job, nsc_store *dst, char *err, size_t errcap)
{
    nsc_proc p = {.local_rank = -1, .gpu = -1};
    snprintf(p.job, sizeof p.job, "%s", job);
    lbatch lb;
    memset(&lb, 0, sizeof lb);
    lb.one = malloc(NSC_LPACK_MAX_EDGES * sizeof *lb.one);
    int rc = 0, bad = !lb.one;
    for (next_row(r); !rc && !bad && r->more;) {
        ident batch = r->at;
        take_ledger_proc(&r->a, &p);
        bad = take_ledger_rec(&r->a, &lb);
        if (!bad)
            next_row(r);
        if (!bad && (!r->more || ident_cmp(&r->at, &batch) != 0))
            rc = put_lbatch(&lb, &p, dst, err, errcap);
    }
    if (!rc && (bad || r->a.r.bad)) {
        snprintf(err, errcap, "clickhouse: the ledger_recs rows do not decode");
        rc = NSC_QUERY_ESTORE;
    }
    free(lb.recs), free(lb.edges), free(lb.one);
    return rc;
}

/* The ledger_recs rows of the two ranges known and unknown ("FROM ...
 * WHERE ...", scope_rows), each once, by batch identity and index. */
static int fetch_records(const source *src, const char *known, const char *unknown, nsc_chanswer *a, char *err,
                         size_t errcap)
{
    char sql[SQL_MAX];
    const char *names = nsc_ch_ledger_names();
    /* each row once by LIMIT 1 BY, not FINAL: FINAL merges every part of the job */
    int n = snprintf(sql, sizeof sql,
                     "SELECT " IDENT ", host, pid, %s FROM (SELECT " IDENT ", idx, host, pid, %s %s UNION ALL "
                     "SELECT " IDENT ", idx, host, pid, %s %s) ORDER BY " IDENT ", idx LIMIT 1 BY " IDENT
                     ", idx FORMAT RowBinary",
                     names, names, known, names, unknown);
    if (n < (int)sizeof sql)
        return fetch(src, sql, "ledger_recs", a, err, errcap);
    snprintf(err, errcap, "clickhouse: the SELECT of ledger_recs is too long");
    return NSC_QUERY_ESTORE;
}

/* The job's ledger on src into dst. Whole: every ledger batch, in the order
 * its agents sent them. With a scope: only its records, in the same order
 * (batch identity, then index in the batch), so a later row of a record's
 * key replaces the earlier, in-flight and final, as from the whole job; a
 * record whose communicator its agent did not know (comm_id 0) is taken
 * whatever its rank. NSC_CHREAD_RECORDS reads them from ledger_recs by its
 * key; NSC_CHREAD_BATCHES the ledger batches holding them (picked by
 * ledger_recs), whole. */
static int read_ledger(const source *src, const char *job, const nsc_query_scope *s, const span *w,
                       nsc_chread_holds how, nsc_store *dst, char *err, size_t errcap)
{
    rows r;
    memset(&r, 0, sizeof r);
    int rc;
    char known[SCOPE_MAX], unknown[SCOPE_MAX];
    if (s) {
        scope_rows(src, s, 0, w, known, sizeof known);
        scope_rows(src, s, 1, w, unknown, sizeof unknown);
    }
    if (s && how == NSC_CHREAD_RECORDS) {
        rc = fetch_records(src, known, unknown, &r.a, err, errcap);
        if (!rc)
            rc = put_ledger_recs(&r, job, dst, err, errcap);
    } else if (s) {
        char in[2 * SCOPE_MAX + 256];
        snprintf(in, sizeof in,
                 " PREWHERE (" IDENT ") GLOBAL IN (SELECT " IDENT " %s) OR (" IDENT ") GLOBAL IN (SELECT " IDENT " %s)",
                 known, unknown);
        rc = fetch_rows(src, "ledger", "", "host, pid, data", "", in, "", ONCE_EACH, &r.a, err, errcap);
        if (!rc)
            rc = put_ledgers(&r, job, dst, err, errcap);
    } else {
        rc = fetch_table(src, "ledger", "host, pid, data", "", IDENT, &r.a, err, errcap);
        if (!rc)
            rc = put_ledgers(&r, job, dst, err, errcap);
    }
    nsc_chanswer_free(&r.a);
    return rc;
}

/* ---- clock models and the wall clock ---- */

static int put_clocks(nsc_chanswer *a, nsc_store *dst, char *err, size_t errcap)
{
    int rc = nsc_store_begin(dst, nsc_mono_ns());
    while (!rc && !nsc_chanswer_at_end(a)) {
        char host[64];
        size_t n;
        nsc_chanswer_text(a, host, sizeof host);
        host[sizeof host - 1] = 0;
        const uint8_t *m = nsc_chanswer_bytes(a, &n);
        nsc_clock_model model;
        if (!m || nsc_clock_deserialize(&model, m, n)) {
            snprintf(err, errcap, "clickhouse: a stored clock model does not decode");
            nsc_store_abort(dst);
            return NSC_QUERY_ESTORE;
        }
        rc = nsc_store_put_clock(dst, host, &model);
        nsc_clock_free(&model);
    }
    return end_load(dst, rc, err, errcap);
}

/* The collectors' wall clock records (docs/api.md, "Wall-clock time"), as
 * the LMDB store keeps them. */
static int put_wall(nsc_chanswer *a, nsc_store *dst, char *err, size_t errcap)
{
    int rc = nsc_store_begin(dst, nsc_mono_ns());
    while (!rc && !nsc_chanswer_at_end(a)) {
        nsc_store_wall_rec r;
        r.utc_ns = nsc_chanswer_le(a, 8);
        r.ref_ns = nsc_chanswer_le(a, 8);
        r.offset_ns = (int64_t)nsc_chanswer_le(a, 8);
        if (!a->r.bad)
            rc = nsc_store_put_wall(dst, &r);
    }
    if (!rc && a->r.bad) {
        snprintf(err, errcap, "clickhouse: a stored wall clock record does not decode");
        nsc_store_abort(dst);
        return NSC_QUERY_ESTORE;
    }
    return end_load(dst, rc, err, errcap);
}

/* The answer of sql (what: its name in errors) put into dst by put. */
static int load_answer(const source *src, const char *sql, const char *what,
                       int (*put)(nsc_chanswer *, nsc_store *, char *, size_t), nsc_store *dst, char *err,
                       size_t errcap)
{
    nsc_chanswer a;
    int rc = fetch(src, sql, what, &a, err, errcap);
    if (!rc)
        rc = put(&a, dst, err, errcap);
    nsc_chanswer_free(&a);
    return rc;
}

/* Every host's newest clock model (host, model) on src. */
static int fetch_models(const source *src, nsc_chanswer *a, char *err, size_t errcap)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT host, argMax(model, ref_ns) FROM %s.clocks%s GROUP BY host FORMAT RowBinary",
             src->db, src->suffix);
    return fetch(src, sql, "clocks", a, err, errcap);
}

/* Every host's newest clock model, then every wall clock record. */
static int read_clocks(const source *src, nsc_store *dst, char *err, size_t errcap)
{
    char sql[512];
    nsc_chanswer a;
    int rc = fetch_models(src, &a, err, errcap);
    if (!rc)
        rc = put_clocks(&a, dst, err, errcap);
    nsc_chanswer_free(&a);
    snprintf(sql, sizeof sql, "SELECT utc_ns, ref_ns, offset_ns FROM %s.%s%s FORMAT RowBinary", src->db,
             nsc_ch_def(NSC_CH_WALL).name, src->suffix);
    return rc ? rc : load_answer(src, sql, "wall", put_wall, dst, err, errcap);
}

/* ---- a time window on each host's clock ---- */

/* A host's time in a window's SQL: "host = 'NAME', NS, " appended to out
 * (*len bytes so far); -1 when it does not fit. */
static int add_host(const char *host, uint64_t ns, char *out, size_t cap, size_t *len)
{
    char lit[160];
    if (nsc_chanswer_literal(host, lit, sizeof lit))
        return -1;
    int n = snprintf(out + *len, cap - *len, "host = %s, %" PRIu64 ", ", lit, ns);
    if (n < 0 || (size_t)n >= cap - *len)
        return -1;
    *len += (size_t)n;
    return 0;
}

/* out's multiIf closed with the default d (a condition first: a job of no
 * host yet has only the default); -1 when it does not fit. */
static int end_hosts(uint64_t d, char *out, size_t cap, size_t len)
{
    int n = snprintf(out + len, cap - len, "0, 0, %" PRIu64 ")", d);
    return n < 0 || (size_t)n >= cap - len ? -1 : 0;
}

/* t on a host's clock by model m (NULL: the collectors' clock), the
 * inverse's slack earlier (late 0) or later. */
static uint64_t on_host(const nsc_clock_model *m, uint64_t t, int late)
{
    uint64_t h = m ? nsc_clock_invert(nsc_clock_model_fwd, m, t) : t;
    if (late)
        return h < UINT64_MAX - NSC_CLOCK_INVERT_SLACK_NS ? h + NSC_CLOCK_INVERT_SLACK_NS : UINT64_MAX;
    return h > NSC_CLOCK_INVERT_SLACK_NS ? h - NSC_CLOCK_INVERT_SLACK_NS : 0;
}

/* t on each row's host clock (on_host), by every source's newest models,
 * as an SQL expression over the row's host into out: "multiIf(host = 'a',
 * NS, ..., NS)", and with range the least and greatest of its values. 1
 * when the hosts' names do not fit, 0, or an NSC_QUERY_* error with err. */
static int host_times(const source *src, size_t nsrc, uint64_t t, int late, char *out, size_t cap, uint64_t *range,
                      char *err, size_t errcap)
{
    size_t len = (size_t)snprintf(out, cap, "multiIf(");
    int rc = 0, full = 0;
    uint64_t got[2] = {on_host(NULL, t, late), on_host(NULL, t, late)};
    for (size_t i = 0; !rc && !full && i < nsrc; i++) {
        nsc_chanswer a;
        rc = fetch_models(&src[i], &a, err, errcap);
        while (!rc && !full && !nsc_chanswer_at_end(&a)) {
            char host[64];
            size_t n;
            nsc_chanswer_text(&a, host, sizeof host);
            host[sizeof host - 1] = 0;
            const uint8_t *m = nsc_chanswer_bytes(&a, &n);
            nsc_clock_model model;
            if (!m || nsc_clock_deserialize(&model, m, n)) {
                snprintf(err, errcap, "clickhouse: a stored clock model does not decode");
                rc = NSC_QUERY_ESTORE;
                break;
            }
            uint64_t h = on_host(&model, t, late);
            full = add_host(host, h, out, cap, &len);
            got[0] = h < got[0] ? h : got[0], got[1] = h > got[1] ? h : got[1];
            nsc_clock_free(&model);
        }
        nsc_chanswer_free(&a);
    }
    if (range)
        range[0] = got[0], range[1] = got[1];
    return rc ? rc : full || end_hosts(on_host(NULL, t, late), out, cap, len) ? 1 : 0;
}

#define SPAN_HOSTS 256

/* ---- the seqs of a time window, by the marks ---- */

/* Buckets of seqs (lo > hi: none). */
typedef struct range {
    uint64_t lo, hi;
} range;

/* "FROM ledger_marks WHERE ..." of scope s on src: its communicator's and
 * those whose agent did not know theirs (comm_id 0), its seqs' buckets. */
static void marks_of(const source *src, const nsc_query_scope *s, char *out, size_t cap)
{
    snprintf(out, cap,
             "FROM %s.%s%s WHERE job = %s AND comm_id IN (%" PRIu64 ", 0) AND bucket BETWEEN %" PRIu64 " AND %" PRIu64,
             src->db, nsc_ch_def(NSC_CH_LEDGER_MARKS).name, src->suffix, src->job, s->comm,
             s->seq_lo >> NSC_CH_MARK_BITS, s->seq_hi >> NSC_CH_MARK_BITS);
}

/* The answer to head, marks_of, tail on every source (min, max and
 * count() of buckets) into *r. */
static int marks_range(const source *src, size_t nsrc, const nsc_query_scope *s, const char *head, const char *tail,
                       range *r, char *err, size_t errcap)
{
    int rc = 0;
    *r = (range){UINT64_MAX, 0};
    for (size_t i = 0; !rc && i < nsrc; i++) {
        char marks[640], q[SQL_MAX];
        nsc_chanswer a;
        marks_of(&src[i], s, marks, sizeof marks);
        snprintf(q, sizeof q, "%s%s%s", head, marks, tail);
        rc = fetch(&src[i], q, "ledger_marks", &a, err, errcap);
        uint64_t lo = rc ? 0 : nsc_chanswer_le(&a, 8), hi = rc ? 0 : nsc_chanswer_le(&a, 8),
                 n = rc ? 0 : nsc_chanswer_le(&a, 8);
        if (!rc && a.r.bad) {
            snprintf(err, errcap, "clickhouse: the ledger marks' answer does not decode");
            rc = NSC_QUERY_ESTORE;
        }
        if (!rc && n)
            r->lo = lo < r->lo ? lo : r->lo, r->hi = hi > r->hi ? hi : r->hi;
        nsc_chanswer_free(&a);
    }
    return rc;
}

/* The buckets holding records of s enqueued from `from` on (each row's
 * host clock), with `to` up to it too (not those of comm_id 0, which a
 * window reads to the end). */
static int window_buckets(const source *src, size_t nsrc, const nsc_query_scope *s, const char *from, const char *to,
                          range *r, char *err, size_t errcap)
{
    char tail[2 * STARTS_MAX + 128];
    snprintf(tail, sizeof tail, " AND enq_max >= %s%s%s%s FORMAT RowBinary", from,
             to ? " AND (comm_id = 0 OR enq_min <= " : "", to ? to : "", to ? ")" : "");
    return marks_range(src, nsrc, s, "SELECT min(bucket), max(bucket), count() ", tail, r, err, errcap);
}

/* The buckets among which each process's last collective before `from`
 * whose kernel ended lies (scope_rows' argMax). Of a process's buckets
 * holding an ended one before `from` (done_min < from), the one holding
 * its latest is no earlier than the first whose latest ended one (done_max)
 * reaches the latest done_max still before `from` (m): that latest one's
 * time is at least m. ClickHouse 18.16's lambdas see no column but their
 * arrays': f and m go in as arrays. */
static int back_buckets(const source *src, size_t nsrc, const nsc_query_scope *s, const char *from, range *r,
                        char *err, size_t errcap)
{
    char head[2 * STARTS_MAX + 1024];
    snprintf(head, sizeof head,
             "SELECT min(l), max(u), count() FROM (SELECT arrayResize(emptyArrayUInt64(), length(bs), f) AS fs, "
             "arrayResize(emptyArrayUInt64(), length(bs), m) AS ms, "
             "arrayReduce('min', arrayFilter((b, x, y, g, n) -> x >= n AND y < g, bs, xs, ys, fs, ms)) AS l, "
             "arrayReduce('max', arrayFilter((b, y, g) -> y < g, bs, ys, fs)) AS u FROM (SELECT toUInt64(any(%s)) AS "
             "f, maxIf(dmax, dmax < %s) AS m, groupArray(bucket) AS bs, groupArray(dmax) AS xs, groupArray(dmin) AS "
             "ys FROM (SELECT comm_id, host, pid, ctx, rank, bucket, min(done_min) AS dmin, max(done_max) AS dmax ",
             from, from);
    return marks_range(src, nsrc, s, head,
                       " GROUP BY comm_id, host, pid, ctx, rank, bucket) GROUP BY comm_id, host, pid, ctx, rank "
                       "HAVING min(dmin) < f)) FORMAT RowBinary",
                       r, err, errcap);
}

/* " AND seq BETWEEN A AND B" of buckets r into out (none: no seq). */
static void seqs_of(range r, char *out, size_t cap)
{
    if (r.lo > r.hi)
        snprintf(out, cap, " AND seq BETWEEN 1 AND 0");
    else
        snprintf(out, cap, " AND seq BETWEEN %" PRIu64 " AND %" PRIu64, r.lo << NSC_CH_MARK_BITS,
                 (r.hi << NSC_CH_MARK_BITS) | ((1u << NSC_CH_MARK_BITS) - 1));
}

/* w->seqs and w->back by the marks, once w->from (and w->till) are set. */
static int marks_span(const source *src, size_t nsrc, const nsc_query_scope *s, span *w, char *err, size_t errcap)
{
    range win = {UINT64_MAX, 0}, back = {UINT64_MAX, 0};
    int rc = window_buckets(src, nsrc, s, w->from, w->till[0] ? w->till : NULL, &win, err, errcap);
    if (!rc)
        rc = back_buckets(src, nsrc, s, w->from, &back, err, errcap);
    seqs_of(back, w->back, sizeof w->back);
    win.lo = back.lo < win.lo ? back.lo : win.lo;
    win.hi = back.lo <= back.hi && back.hi > win.hi ? back.hi : win.hi;
    seqs_of(win, w->seqs, sizeof w->seqs);
    return rc;
}

/* w->till from the latest enqueues of the window's seqs (to: t1 on each
 * host's clock) of every source: 1 when they do not fit. */
static int span_till(const source *src, size_t nsrc, const nsc_query_scope *s, const char *to, span *w, char *err,
                     size_t errcap)
{
    char keys[512], sql[SQL_MAX];
    struct { char host[64]; uint64_t ns; } last[SPAN_HOSTS];
    size_t nlast = 0;
    int rc = 0, full = 0;
    for (size_t i = 0; !rc && !full && i < nsrc; i++) {
        nsc_chanswer a;
        scope_rows(&src[i], s, 0, NULL, keys, sizeof keys);
        snprintf(sql, sizeof sql, "SELECT host, max(enqueue_ns) %s%s AND seq GLOBAL IN (SELECT seq %s%s AND "
                 "enqueue_ns BETWEEN %s AND %s) GROUP BY host FORMAT RowBinary", keys, w->seqs, keys, w->seqs, w->from,
                 to);
        rc = fetch(&src[i], sql, "ledger_recs", &a, err, errcap);
        while (!rc && !full && !nsc_chanswer_at_end(&a)) {
            char host[64];
            nsc_chanswer_text(&a, host, sizeof host);
            host[sizeof host - 1] = 0;
            uint64_t ns = nsc_chanswer_le(&a, 8);
            if (a.r.bad)
                break;
            size_t k = 0;
            while (k < nlast && strcmp(last[k].host, host) != 0)
                k++;
            if (k == nlast && !(full = nlast == SPAN_HOSTS))
                memcpy(last[nlast].host, host, sizeof host), last[nlast++].ns = 0;
            if (!full && ns > last[k].ns)
                last[k].ns = ns;
        }
        if (!rc && a.r.bad) {  /* a short answer would end the window early */
            snprintf(err, errcap, "clickhouse: the latest enqueues of the window's seqs do not decode");
            rc = NSC_QUERY_ESTORE;
        }
        nsc_chanswer_free(&a);
    }
    size_t len = (size_t)snprintf(w->till, sizeof w->till, "multiIf(");
    for (size_t k = 0; !rc && !full && k < nlast; k++)
        full = add_host(last[k].host, last[k].ns, w->till, sizeof w->till, &len);
    return rc ? rc : full || end_hosts(0, w->till, sizeof w->till, len) ? 1 : 0;
}

/* scope's time window on each host's clock into *w, or *use 0 when it has
 * none or its hosts do not fit (the scope is then read from its first
 * seq). 0, or an NSC_QUERY_* error with err. */
static int scope_span(const source *src, size_t nsrc, const nsc_query_scope *scope, span *w, int *use, char *err,
                      size_t errcap)
{
    *use = 0;
    w->till[0] = w->seqs[0] = 0;
    if (!scope || !scope->t0)
        return 0;
    int rc = host_times(src, nsrc, scope->t0, 0, w->from, sizeof w->from, NULL, err, errcap);
    if (!rc && scope->t1 != UINT64_MAX) {
        char to[STARTS_MAX];
        range r = {UINT64_MAX, 0};
        rc = host_times(src, nsrc, scope->t1, 1, to, sizeof to, NULL, err, errcap);
        if (!rc)
            rc = window_buckets(src, nsrc, scope, w->from, to, &r, err, errcap);
        seqs_of(r, w->seqs, sizeof w->seqs);
        if (!rc)
            rc = span_till(src, nsrc, scope, to, w, err, errcap);
    }
    if (!rc)
        rc = marks_span(src, nsrc, scope, w, err, errcap);
    *use = rc == 0;
    return rc == 1 ? 0 : rc;
}

/* ---- a timeline's window: the sections reaching into it ---- */

/* A window on each host's clock: SQL over a row's host (host_times, and
 * NSC_CLOCK_INVERT_SLACK_NS wider again: the engine's own margin is
 * computed apart) and the buckets that can hold its sections; with a
 * communicator, only the processes of its ranks in the scope's span. */
typedef struct tspan {
    char from[STARTS_MAX], till[STARTS_MAX];  /* till[0] 0: no end */
    uint64_t b0, b1;
    const nsc_query_scope *scope;
} tspan;

#define SLACK_SQL "10000000"
#define KEYS_MAX 8192  /* window_keys' ranges: about 40 processes' */
#define PROCS_MAX 4096  /* window_procs' processes: about 150 */
_Static_assert(NSC_CLOCK_INVERT_SLACK_NS == 10000000, "SLACK_SQL is the slack");

/* scope's t0, t1 (aligned; 0, UINT64_MAX: open) on each host's clock into
 * *w: 1 when the hosts do not fit (the whole job is read then). */
static int window_times(const source *src, size_t nsrc, const nsc_query_scope *scope, tspan *w, char *err,
                        size_t errcap)
{
    uint64_t r0[2] = {0, 0}, r1[2] = {UINT64_MAX, UINT64_MAX}, t0 = scope->t0, t1 = scope->t1;
    int rc = 0;
    w->scope = scope;
    snprintf(w->from, sizeof w->from, "0");
    w->till[0] = 0;
    if (t0)
        rc = host_times(src, nsrc, t0, 0, w->from, sizeof w->from, r0, err, errcap);
    if (!rc && t1 != UINT64_MAX)
        rc = host_times(src, nsrc, t1, 1, w->till, sizeof w->till, r1, err, errcap);
    r0[0] = r0[0] > NSC_CLOCK_INVERT_SLACK_NS ? r0[0] - NSC_CLOCK_INVERT_SLACK_NS : 0;
    r1[1] = r1[1] < UINT64_MAX - NSC_CLOCK_INVERT_SLACK_NS ? r1[1] + NSC_CLOCK_INVERT_SLACK_NS : UINT64_MAX;
    w->b0 = r0[0] >> NSC_CH_TIME_BITS;
    w->b1 = r1[1] >> NSC_CH_TIME_BITS;
    return rc;
}

/* " AND (host, pid) IN (...)": the processes whose contexts hold scope s's
 * ranks of its communicator, into out; for a p2p scope " AND ((host, pid,
 * p2p_ctx) IN (...) OR p2p_ctx = NSC_CTX_NONE)", those contexts (a mark's
 * "any" too); "" without a communicator or where they do not fit in cap
 * (every process's sections are read then). */
static int window_procs(const source *src, const nsc_query_scope *s, char *out, size_t cap, char *err,
                        size_t errcap)
{
    char sql[1024];
    nsc_chanswer a;
    out[0] = 0;
    if (!s->comm)
        return 0;
    snprintf(sql, sizeof sql,
             "SELECT DISTINCT host, pid, %s FROM %s.contexts%s WHERE job = %s AND comm_id = %" PRIu64
             " AND rank BETWEEN %" PRId32 " AND %" PRId32 " FORMAT RowBinary",
             s->p2p ? "ctx" : "toUInt16(0)", src->db, src->suffix, src->job, s->comm, s->rank_lo, s->rank_hi);
    int rc = fetch(src, sql, "contexts", &a, err, errcap), full = 0;
    size_t len = (size_t)snprintf(out, cap, s->p2p ? " AND ((host, pid, p2p_ctx) IN (" : " AND (host, pid) IN ("),
           first = len;
    while (!rc && !full && !nsc_chanswer_at_end(&a)) {
        char host[80], lit[200], ctx[16] = "";
        nsc_chanswer_text(&a, host, sizeof host);
        host[sizeof host - 1] = 0;
        uint32_t pid = (uint32_t)nsc_chanswer_le(&a, 4);
        uint16_t c = (uint16_t)nsc_chanswer_le(&a, 2);
        if (s->p2p)
            snprintf(ctx, sizeof ctx, ", %u", (unsigned)c);
        int n = a.r.bad || nsc_chanswer_literal(host, lit, sizeof lit)
                    ? -1
                    : snprintf(out + len, cap - len, "%s(%s, %" PRIu32 "%s)", len > first ? ", " : "", lit, pid, ctx);
        full = n < 0 || (size_t)n + 40 >= cap - len;  /* room for the closing ") OR ...)" */
        len += full ? 0 : (size_t)n;
    }
    if (!rc && a.r.bad) {
        snprintf(err, errcap, "clickhouse: the communicator's processes do not decode");
        rc = NSC_QUERY_ESTORE;
    }
    if (full || rc)
        out[0] = 0;
    else if (len == first)  /* none: the query finds no such rank */
        snprintf(out, cap, " AND 0");
    else if (s->p2p)
        snprintf(out + len, cap - len, ") OR p2p_ctx = %u)", (unsigned)NSC_CTX_NONE);
    else
        snprintf(out + len, cap - len, ")");
    nsc_chanswer_free(&a);
    return rc;
}

/* "FROM event_marks WHERE ..." of the sections of src's job whose record
 * times reach into w: a range of the table's key (and the wide bucket), of
 * the processes procs names (window_procs); for a p2p scope, a row per
 * P2p context of a section (p2p_ctx), and none for a section without. */
static void window_marks(const source *src, const tspan *w, const char *procs, char *out, size_t cap)
{
    snprintf(out, cap,
             "FROM %s.%s%s%s WHERE job = %s AND (bucket BETWEEN %" PRIu64 " AND %" PRIu64 " OR bucket = %" PRIu64
             ") AND t_max + " SLACK_SQL " >= %s%s%s%s",
             src->db, nsc_ch_def(NSC_CH_EVENT_MARKS).name, src->suffix,
             w->scope->p2p ? " ARRAY JOIN p2p_ctxs AS p2p_ctx" : "", src->job, w->b0, w->b1,
             (uint64_t)NSC_CH_TIME_WIDE, w->from, w->till[0] ? " AND t_min <= " SLACK_SQL " + " : "",
             w->till[0] ? w->till : "", procs);
}

/* Sections as key ranges of states, completions, events and batches, and
 * the least t_min and greatest t_max of them (what bounds their events'
 * starts). */
typedef struct wkeys {
    /* "(host = 'h' AND pid = P AND agent = 'a' AND epoch = E AND batch_seq
     * BETWEEN L AND H) OR ...": one per process and agent epoch (one per
     * section spanning more than NSC_CH_TIME_SPAN buckets: it may lie far
     * before the others; one per defining section); "1" where they do not
     * fit */
    char secs[KEYS_MAX];
    uint64_t range[2];
    uint64_t n;  /* ranges: 0, no section */
} wkeys;

/* The ranges of sql's answer, rows of (host, pid, agent, epoch, least and
 * greatest batch_seq, least t_min, greatest t_max), into *k. ClickHouse
 * 18.16 narrows no granule by a GLOBAL IN of identities: without the
 * ranges, the reads that pick sections by them take every row of the job. */
static int keys_of(const source *src, const char *sql, const char *what, wkeys *k, char *err, size_t errcap)
{
    nsc_chanswer a;
    int rc = fetch(src, sql, what, &a, err, errcap), full = 0;
    size_t len = 0;
    snprintf(k->secs, sizeof k->secs, "0");
    k->range[0] = UINT64_MAX, k->range[1] = 0, k->n = 0;
    while (!rc && !nsc_chanswer_at_end(&a)) {
        char host[80], agent[80], hl[200], al[200];
        nsc_chanswer_text(&a, host, sizeof host);
        uint32_t pid = (uint32_t)nsc_chanswer_le(&a, 4);
        nsc_chanswer_text(&a, agent, sizeof agent);
        uint64_t epoch = nsc_chanswer_le(&a, 8), lo = nsc_chanswer_le(&a, 8), hi = nsc_chanswer_le(&a, 8);
        uint64_t t0 = nsc_chanswer_le(&a, 8), t1 = nsc_chanswer_le(&a, 8);
        host[sizeof host - 1] = agent[sizeof agent - 1] = 0;
        if (a.r.bad)
            break;
        k->n++;
        k->range[0] = t0 < k->range[0] ? t0 : k->range[0], k->range[1] = t1 > k->range[1] ? t1 : k->range[1];
        /* a name too long to quote: no range bounds its sections */
        int n = full || nsc_chanswer_literal(host, hl, sizeof hl) || nsc_chanswer_literal(agent, al, sizeof al)
                    ? -1
                    : snprintf(k->secs + len, sizeof k->secs - len,
                               "%s(host = %s AND pid = %" PRIu32 " AND agent = %s AND epoch = %" PRIu64
                               " AND batch_seq BETWEEN %" PRIu64 " AND %" PRIu64 ")",
                               len ? " OR " : "", hl, pid, al, epoch, lo, hi);
        full = n < 0 || (size_t)n >= sizeof k->secs - len;
        len += full ? 0 : (size_t)n;
    }
    if (!rc && a.r.bad) {
        snprintf(err, errcap, "clickhouse: the %s sections do not decode", what);
        rc = NSC_QUERY_ESTORE;
    }
    if (full)
        snprintf(k->secs, sizeof k->secs, "1");
    nsc_chanswer_free(&a);
    return rc;
}

/* The window's sections (marks) into *k. */
static int window_keys(const source *src, const char *marks, wkeys *k, char *err, size_t errcap)
{
    char sql[SQL_MAX];
    snprintf(sql, sizeof sql,
             "SELECT host, pid, agent, epoch, min(batch_seq), max(batch_seq), min(t_min), max(t_max) %s GROUP BY "
             "host, pid, agent, epoch, if(bucket = %" PRIu64 ", batch_seq, 0) FORMAT RowBinary",
             marks, (uint64_t)NSC_CH_TIME_WIDE);
    return keys_of(src, sql, "event_marks", k, err, errcap);
}

/* The sections of src's job that define contexts or strings into *k, each
 * a range of its own (no times: its range stays empty). */
static int defs_keys(const source *src, wkeys *k, char *err, size_t errcap)
{
    char sql[SQL_MAX];
    const char *cols = "host, pid, agent, epoch, batch_seq AS lo, batch_seq AS hi";
    snprintf(sql, sizeof sql,
             "SELECT DISTINCT host, pid, agent, epoch, lo, hi, toUInt64(%" PRIu64 "), toUInt64(0) FROM (SELECT %s FROM "
             "%s.contexts%s WHERE job = %s UNION ALL SELECT %s FROM %s.strings%s WHERE job = %s) FORMAT RowBinary",
             UINT64_MAX, cols, src->db, src->suffix, src->job, cols, src->db, src->suffix, src->job);
    return keys_of(src, sql, "defining", k, err, errcap);
}

/* The sections of the job on src that define contexts or strings (their
 * definitions alone) or reach into w (whole) into dst, in the order of a
 * whole load. */
static int read_window_source(const source *src, const char *job, const tspan *w, nsc_store *dst, char *err,
                              size_t errcap)
{
    rows anchor, r[K_N];
    memset(&anchor, 0, sizeof anchor);
    memset(r, 0, sizeof r);
    char values[2048], procs[PROCS_MAX], marks[3 * STARTS_MAX + PROCS_MAX], sel[SQL_MAX], recs[SQL_MAX],
        where[2 * KEYS_MAX + 32];
    wkeys keys = {.secs = "0"}, defs = {.secs = "0"};
    event_value_names(values, sizeof values);
    int rc = window_procs(src, w->scope, procs, sizeof procs, err, errcap);
    window_marks(src, w, procs, marks, sizeof marks);
    if (!rc)
        rc = window_keys(src, marks, &keys, err, errcap);
    if (!rc)
        rc = defs_keys(src, &defs, err, errcap);
    snprintf(sel, sizeof sel,
             " PREWHERE (" IDENT ") GLOBAL IN (SELECT " IDENT " FROM %s.contexts%s WHERE job = %s UNION ALL SELECT "
             IDENT " FROM %s.strings%s WHERE job = %s UNION ALL SELECT " IDENT " %s)",
             src->db, src->suffix, src->job, src->db, src->suffix, src->job, marks);
    /* the key ranges in WHERE: they narrow the granules read, the
     * identities in PREWHERE (fewer columns, every row of those granules)
     * the rows */
    snprintf(where, sizeof where, " AND ((%s) OR (%s))", keys.secs, defs.secs);
    if (!rc)
        rc = fetch_rows(src, "batches", "", "host, pid, local_rank, gpu", "", sel, where, ONCE_EACH, &anchor.a, err,
                        errcap);
    snprintf(where, sizeof where, " AND (%s)", keys.secs);
    for (int i = 0; !rc && keys.n && i < K_CTXS; i++) {
        if (i == K_EVENTS)  /* by their key's time too: the granules of the window */
            snprintf(recs, sizeof recs,
                     " PREWHERE start_ns BETWEEN %" PRIu64 " AND %" PRIu64 " AND (" IDENT ") GLOBAL IN (SELECT " IDENT
                     " %s)", keys.range[0], keys.range[1], marks);
        else
            snprintf(recs, sizeof recs, " PREWHERE (host, pid, " IDENT ") GLOBAL IN (SELECT host, pid, " IDENT " %s)",
                     marks);
        rc = fetch_rows(src, kinds[i].table, "", kinds[i].columns ? kinds[i].columns : values, kinds[i].join, recs,
                        where, kinds[i].order, &r[i].a, err, errcap);
    }
    for (int k = K_CTXS; !rc && k < K_N; k++)
        rc = fetch_table(src, kinds[k].table, kinds[k].columns, kinds[k].join, kinds[k].order, &r[k].a, err, errcap);
    return merge_fetched(rc, &anchor, r, job, dst, err, errcap);
}

/* ---- entry points ---- */

static size_t sources(const nsc_chstore *ch, const char *job, const char *tmpdir, uint64_t *read, source *out)
{
    const char *servers[NSC_CHSTORE_SHARDS_MAX], *suffix, *db;
    size_t n = nsc_chstore_sources(ch, servers, NSC_CHSTORE_SHARDS_MAX, &suffix, &db);
    for (size_t i = 0; i < n; i++) {
        out[i] = (source){nsc_chstore_conn(ch), servers[i], suffix, db, tmpdir, read, ""};
        if (job && nsc_chanswer_literal(job, out[i].job, sizeof out[i].job))
            return 0;
    }
    return n;
}

/* A timeline window's scope: the job's sections reaching into it, of its
 * ranks' processes (all of the job when the hosts' times do not fit), and
 * the clock models. */
static int read_window(const source *src, size_t n, const char *job, const nsc_query_scope *scope, nsc_store *dst,
                       char *err, size_t errcap)
{
    tspan w;
    int rc = window_times(src, n, scope, &w, err, errcap), whole = rc == 1;
    rc = whole ? 0 : rc;
    for (size_t i = 0; !rc && i < n; i++)
        rc = whole ? read_source(&src[i], job, 0, dst, err, errcap)
                   : read_window_source(&src[i], job, &w, dst, err, errcap);
    for (size_t i = 0; !rc && i < n; i++)
        rc = read_clocks(&src[i], dst, err, errcap);
    return rc;
}

int nsc_chread_job(const nsc_chstore *ch, const char *job, const nsc_query_scope *scope, nsc_chread_holds how,
                   int ledger, const char *tmpdir, nsc_store *dst, uint64_t *read, char *err, size_t errcap)
{
    source src[NSC_CHSTORE_SHARDS_MAX];
    size_t n = sources(ch, job, tmpdir, read, src);
    if (!n) {
        snprintf(err, errcap, "job: too long");
        return NSC_QUERY_EPARAM;
    }
    if (scope && scope->defs) {
        int rc = 0;
        for (size_t i = 0; !rc && i < n; i++)
            rc = read_source(&src[i], job, 1, dst, err, errcap);
        for (size_t i = 0; !rc && i < n; i++)
            rc = read_clocks(&src[i], dst, err, errcap);
        return rc;
    }
    if (scope && scope->events)
        return read_window(src, n, job, scope, dst, err, errcap);
    span w;
    int timed;
    int rc = scope_span(src, n, scope, &w, &timed, err, errcap);
    /* shard by shard: a process's rows are all on one shard */
    for (size_t i = 0; !rc && i < n; i++)
        rc = read_source(&src[i], job, scope != NULL, dst, err, errcap);
    /* the ledger's records come after every section, as in a whole load,
     * so leaving them out changes nothing the sections put */
    for (size_t i = 0; !rc && (ledger || scope) && i < n; i++)
        rc = read_ledger(&src[i], job, scope, timed ? &w : NULL, how, dst, err, errcap);
    for (size_t i = 0; !rc && i < n; i++)
        rc = read_clocks(&src[i], dst, err, errcap);
    return rc;
}

int nsc_chread_scope_holds(const nsc_chstore *ch, const nsc_query_scope *scope, uint64_t max, const char *tmpdir,
                           nsc_chread_holds *holds, char *err, size_t errcap)
{
    source src[NSC_CHSTORE_SHARDS_MAX];
    size_t n = sources(ch, scope->job, tmpdir, NULL, src);
    if (!n) {
        snprintf(err, errcap, "job: too long");
        return NSC_QUERY_EPARAM;
    }
    span w;
    int timed;
    int rc = scope_span(src, n, scope, &w, &timed, err, errcap);
    uint64_t found = 0;
    /* a bounded count: reading the window's key past max tells nothing more */
    for (size_t i = 0; !rc && found <= max && i < n; i++) {
        char sql[SCOPE_MAX + 128], from[SCOPE_MAX];
        nsc_chanswer a;
        scope_rows(&src[i], scope, 0, timed ? &w : NULL, from, sizeof from);
        snprintf(sql, sizeof sql, "SELECT count() FROM (SELECT 1 %s LIMIT %" PRIu64 ") FORMAT RowBinary", from,
                 max + 1 - found);
        rc = fetch(&src[i], sql, "ledger_recs", &a, err, errcap);
        found += rc ? 0 : nsc_chanswer_le(&a, 8);
        nsc_chanswer_free(&a);
    }
    *holds = !found ? NSC_CHREAD_NONE : found <= max ? NSC_CHREAD_RECORDS : NSC_CHREAD_BATCHES;
    return rc;
}

int nsc_chread_only_job(const nsc_chstore *ch, const char *tmpdir, char *job, size_t cap, char *err,
                        size_t errcap)
{
    source src[NSC_CHSTORE_SHARDS_MAX];
    size_t n = sources(ch, NULL, tmpdir, NULL, src), found = 0;
    int rc = 0;
    job[0] = 0;
    for (size_t i = 0; !rc && i < n && found < 2; i++) {
        char sql[256];
        nsc_chanswer a;
        snprintf(sql, sizeof sql, "SELECT DISTINCT job FROM %s.batches%s LIMIT 2 FORMAT RowBinary", src[i].db,
                 src[i].suffix);
        rc = fetch(&src[i], sql, "batches", &a, err, errcap);
        while (!rc && !nsc_chanswer_at_end(&a) && found < 2) {
            char name[64];
            nsc_chanswer_text(&a, name, sizeof name);
            name[sizeof name - 1] = 0;
            if (!a.r.bad && strcmp(name, job) != 0)
                found++, snprintf(job, cap, "%s", name);
        }
        nsc_chanswer_free(&a);
    }
    if (!rc && found > 1) {
        snprintf(err, errcap, "ClickHouse holds several jobs: name one with job=");
        rc = NSC_QUERY_EPARAM;
    }
    return rc;
}

/* One query's answer appended to out (text), -1 when it does not fit. */
static int append_answer(const source *src, const char *sql, const char *what, char *out, size_t cap, size_t *len,
                         char *err, size_t errcap)
{
    nsc_chanswer a;
    int rc = fetch(src, sql, what, &a, err, errcap);
    if (!rc && *len + a.len + 1 > cap) {
        snprintf(err, errcap, "clickhouse: %s: the fingerprint is too long", what);
        rc = NSC_QUERY_ESTORE;
    }
    if (!rc && a.len) {
        memcpy(out + *len, a.map, a.len);
        *len += a.len;
        out[*len] = 0;
    }
    nsc_chanswer_free(&a);
    return rc;
}

int nsc_chread_print(const nsc_chstore *ch, const char *job, const char *tmpdir, char *out, size_t cap, char *err,
                     size_t errcap)
{
    source src[NSC_CHSTORE_SHARDS_MAX];
    size_t n = sources(ch, job, tmpdir, NULL, src), len = 0;
    if (!n) {
        snprintf(err, errcap, "job: too long");
        return NSC_QUERY_EPARAM;
    }
    int rc = 0;
    out[0] = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT count(), sum(events), sum(states), sum(completions) FROM %s.batches%s FINAL "
                 "WHERE job = %s FORMAT TabSeparated",
                 src[i].db, src[i].suffix, src[i].job);
        rc = append_answer(&src[i], sql, "batches", out, cap, &len, err, errcap);
        /* each host's newest model is what a load reads; merges do not change it */
        snprintf(sql, sizeof sql,
                 "SELECT count(), groupBitXor(cityHash64(host, newest)) FROM "
                 "(SELECT host, max(ref_ns) AS newest FROM %s.clocks%s GROUP BY host) FORMAT TabSeparated",
                 src[i].db, src[i].suffix);
        if (!rc)
            rc = append_answer(&src[i], sql, "clocks", out, cap, &len, err, errcap);
        /* the latest wall clock is the answers' (a collector's start records
         * the same one again, an NTP step or a reboot another) */
        snprintf(sql, sizeof sql, "SELECT argMax(offset_ns, utc_ns) FROM %s.%s%s FORMAT TabSeparated", src[i].db,
                 nsc_ch_def(NSC_CH_WALL).name, src[i].suffix);
        if (!rc)
            rc = append_answer(&src[i], sql, "wall", out, cap, &len, err, errcap);
    }
    return rc;
}
