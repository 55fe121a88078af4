/* rootcause.c: why a job is slow or stuck, and where (diagnose's causes and
 * the links document, diag.h).
 *
 * Owns the proxy pass: one pass over a communicator's ledger records that
 * collects the rank hosts, the links' step times and when some of them
 * began (their send edges, from those the root-cause passes carried of the
 * seqs before it: diag.h, nsc_rc_carry) and a stuck collective's progress
 * (its records' edges), then, with a stuck
 * collective, one over its raw ProxyOp and ProxyStep events for the steps
 * whose ProxyOp is in no record; then runs the analyses on it (rcint.h says
 * which file owns each) and builds the links document.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "order.h"
#include "qs.h"
#include "rcint.h"

/* ---- the proxy pass -------------------------------------------------------- */

static uint64_t op_hash(int32_t rank, uint64_t id)
{
    uint64_t h = id * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uint32_t)rank * 0xc2b2ae3d27d4eb4full;
    return h ^ (h >> 29);
}

static rc_op *op_find(rc_pass *p, int32_t rank, uint64_t id)
{
    if (!p->ops_cap)
        return NULL;
    for (size_t i = op_hash(rank, id) & (p->ops_cap - 1);; i = (i + 1) & (p->ops_cap - 1)) {
        if (!p->ops[i].id)
            return NULL;
        if (p->ops[i].id == id && p->ops[i].rank == rank)
            return &p->ops[i];
    }
}

static int op_put(rc_pass *p, const rc_op *op)
{
    if (2 * (p->ops_n + 1) > p->ops_cap) {
        size_t cap = p->ops_cap ? 2 * p->ops_cap : 1024;
        rc_op *old = p->ops, *ops = calloc(cap, sizeof *ops);
        if (!ops)
            return -1;
        size_t oldcap = p->ops_cap;
        p->ops = ops, p->ops_cap = cap, p->ops_n = 0;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].id && op_put(p, &old[i]))
                return -1;
        free(old);
    }
    size_t i = op_hash(op->rank, op->id) & (p->ops_cap - 1);
    while (p->ops[i].id && !(p->ops[i].id == op->id && p->ops[i].rank == op->rank))
        i = (i + 1) & (p->ops_cap - 1);
    p->ops_n += !p->ops[i].id;
    p->ops[i] = *op;
    return 0;
}

static int is_open(const nsc_json *ev)
{
    const nsc_json *fl = nsc_json_get(ev, "flags");
    for (const nsc_json *x = nsc_json_first(fl); x; x = nsc_json_next(fl, x))
        if (nsc_json_str(x) && strcmp(nsc_json_str(x), "open") == 0)
            return 1;
    return 0;
}

static void on_op(rc_pass *p, const nsc_json *ev, int32_t rank)
{
    rc_op op = {nsc_diag_num(ev, "id"), rank, (int32_t)nsc_diag_num(ev, "peer"), (uint8_t)nsc_diag_num(ev, "channel"),
                nsc_diag_num(ev, "is_send") != 0};
    if (!op.id || op.channel >= RC_MAX_CHANNELS)
        return;
    if (op_put(p, &op))
        p->oom = 1;
    p->last_peer[nsc_rc_pidx(rank, op.channel, op.is_send)] = op.peer;
}

static rc_link *link_of(rc_pass *p, int32_t src, int32_t dst, uint8_t channel)
{
    for (size_t i = p->nlinks; i-- > 0;)
        if (p->links[i].src == src && p->links[i].dst == dst && p->links[i].channel == channel)
            return &p->links[i];
    if (nsc_grow(&p->links, p->nlinks, &p->links_cap, sizeof *p->links, 16))
        return NULL;
    rc_link *k = &p->links[p->nlinks++];
    memset(k, 0, sizeof *k);
    k->src = src, k->dst = dst, k->channel = channel;
    return k;
}

/* A send edge of a ledger record that began at t_ns (its enqueue): its
 * steps' times from their send wait on (peer ready, link free). The ledger
 * keeps their sum per collective, not each step's: each step counts at
 * their mean. (Its longest step is a whole step's time, GPU and peer waits
 * included: taken as one step's send wait it left the others' near 0 on a
 * loaded host.) */
static void add_edge(rc_pass *p, int32_t rank, const nsc_json *e, uint64_t t_ns)
{
    uint64_t steps = nsc_diag_num(e, "steps"), wait = nsc_diag_num(e, "wait_send_ns");
    uint64_t ch = nsc_diag_num(e, "channel");
    if (!nsc_diag_num(e, "is_send") || !steps || !wait || ch >= RC_MAX_CHANNELS)
        return;
    rc_link *k = link_of(p, rank, (int32_t)nsc_diag_num_or(e, "peer", -1), (uint8_t)ch);
    size_t n = k && steps < RC_LINK_MAX_STEPS - k->n ? (size_t)steps : k ? RC_LINK_MAX_STEPS - k->n : 0;
    if (!k || nsc_rc_link_add(k, wait / steps, n, t_ns)) {
        p->oom = 1;
        return;
    }
    k->bytes += nsc_diag_num(e, "bytes");
    k->busy_ns += wait;
}

static void keep_hosts(rc_pass *p, const nsc_json *header)
{
    const nsc_json *ranks = nsc_json_get(header, "ranks");
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        const char *host = nsc_json_str(nsc_json_get(r, "host"));
        uint64_t rank = nsc_diag_num(r, "rank");
        if (host && rank < (uint64_t)p->nranks)
            snprintf(p->host[rank], sizeof p->host[rank], "%s", host);
    }
}

/* One line of the communicator's ledger: the hosts, each record's send
 * edges, and the stuck collective's progress. */
static int on_ledger(void *arg, const nsc_json *v, const char *line, size_t len)
{
    (void)line, (void)len;
    rc_pass *p = arg;
    const nsc_rc_late *l = p->l;
    const char *kind = nsc_json_str(nsc_json_get(v, "kind")), *func = nsc_json_str(nsc_json_get(v, "func"));
    int64_t rank = -1;
    if (kind && strcmp(kind, "header") == 0)
        keep_hosts(p, v);
    if (!kind || strcmp(kind, "record") != 0 || nsc_json_i64(nsc_json_get(v, "rank"), &rank) || rank < 0 ||
        rank >= p->nranks)
        return 0;
    int stuck = l->stuck && nsc_diag_num(v, "seq") == l->stuck_seq && func && strcmp(func, l->stuck_func) == 0;
    const nsc_json *edges = nsc_json_get(v, "edges");
    uint64_t t = nsc_diag_num(v, "enqueue_ns");
    for (const nsc_json *e = nsc_json_first(edges); e; e = nsc_json_next(edges, e)) {
        add_edge(p, (int32_t)rank, e, t);
        if (stuck)
            nsc_rc_stall_edge(p, (int32_t)rank, e);
    }
    return p->oom;
}

/* Direction of a step from its states (its ProxyOp may be unknown). */
static int step_is_send(const nsc_json *ev)
{
    const nsc_json *st = nsc_json_get(ev, "states");
    const nsc_json *s = nsc_json_first(st);
    const char *name = s ? nsc_json_str(nsc_json_get(s, "state")) : NULL;
    return name && strncmp(name, "ProxyStepSend", 13) == 0;
}

static void add_orphan(rc_pass *p, int32_t rank, uint64_t op, int is_send, int32_t step, int open)
{
    for (size_t i = 0; i < p->norph; i++)
        if (p->orph[i].rank == rank && p->orph[i].op == op) {
            if (!open && step > p->orph[i].done)
                p->orph[i].done = step;
            return;
        }
    if (nsc_grow(&p->orph, p->norph, &p->orph_cap, sizeof *p->orph, 16)) {
        p->oom = 1;
        return;
    }
    p->orph[p->norph++] = (rc_orphan){rank, open ? -1 : step, op, (uint8_t)is_send};
}

static void on_step(rc_pass *p, const nsc_json *ev, int32_t rank)
{
    uint64_t parent = nsc_diag_num(ev, "parent");
    int32_t step = (int32_t)nsc_diag_num(ev, "step");
    /* the stuck collective's progress is its ledger records' (on_ledger),
     * but for steps whose ProxyOp is still open, so in no record */
    if (!op_find(p, rank, parent) && nsc_diag_num(ev, "start_ns") >= p->l->stuck_start)
        add_orphan(p, rank, parent, step_is_send(ev), step, is_open(ev));
}

static int on_event(void *arg, const nsc_json *v, const char *line, size_t len)
{
    (void)line, (void)len;
    rc_pass *p = arg;
    const char *type = nsc_json_str(nsc_json_get(v, "type"));
    int64_t rank = -1;
    if (!type || nsc_json_i64(nsc_json_get(v, "rank"), &rank) || rank < 0 || rank >= p->nranks)
        return 0;
    if (strcmp(type, "ProxyOp") == 0)
        on_op(p, v, (int32_t)rank);
    else if (strcmp(type, "ProxyStep") == 0)
        on_step(p, v, (int32_t)rank);
    return p->oom;
}

/* ---- the links carried between passes ---------------------------------------- */

struct nsc_rc_links {
    rc_link *v;
    size_t n, cap;
};

static void links_release(rc_link *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].ns);
        free(v[i].sorted);
    }
    free(v);
}

/* Each carried link's steps sorted again, its steps from was[i] on (the
 * fold's; all of a link past nwas) merged in: 0, or -1 without memory. */
static int links_sort(nsc_rc_links *k, const size_t *was, size_t nwas)
{
    for (size_t i = 0; i < k->n; i++) {
        rc_link *l = &k->v[i];
        size_t old = i < nwas ? was[i] : 0;
        uint64_t *out = old == l->n ? NULL : malloc(l->n * sizeof *out);
        if (old == l->n)
            continue;
        if (!out)
            return -1;
        nsc_rc_merge_steps(l->sorted, old, l->ns + old, l->n - old, out);
        free(l->sorted);
        l->sorted = out;
    }
    return 0;
}

void nsc_rc_links_free(nsc_rc_links *k)
{
    if (k)
        links_release(k->v, k->n);
    free(k);
}

static int on_fold(void *arg, const nsc_json *v, const char *line, size_t len)
{
    (void)line, (void)len;
    rc_pass *p = arg;
    const char *kind = nsc_json_str(nsc_json_get(v, "kind"));
    int64_t rank = -1;
    if (!kind || strcmp(kind, "record") != 0 || nsc_json_i64(nsc_json_get(v, "rank"), &rank) || rank < 0 ||
        rank >= p->nranks)
        return 0;
    const nsc_json *edges = nsc_json_get(v, "edges");
    uint64_t t = nsc_diag_num(v, "enqueue_ns");
    for (const nsc_json *e = nsc_json_first(edges); e; e = nsc_json_next(edges, e))
        add_edge(p, (int32_t)rank, e, t);
    return p->oom;
}

int nsc_rc_links_fold(nsc_findings *f, nsc_rc_links **carried, int64_t nranks, const char *q, const char *seqs)
{
    char lq[2048];
    if (nsc_diag_qs_seqs(lq, sizeof lq, q, seqs)) {
        snprintf(f->src->err, sizeof f->src->err, "query string too long");
        return NSC_DIAG_FAIL;
    }
    if (!*carried && !(*carried = calloc(1, sizeof **carried))) {
        snprintf(f->src->err, sizeof f->src->err, "out of memory");
        return NSC_DIAG_FAIL;
    }
    nsc_rc_links *k = *carried;
    size_t *was = malloc((k->n + 1) * sizeof *was), nwas = k->n;
    if (!was) {
        snprintf(f->src->err, sizeof f->src->err, "out of memory");
        return NSC_DIAG_FAIL;
    }
    for (size_t i = 0; i < nwas; i++)
        was[i] = k->v[i].n;
    rc_pass p = {.nranks = nranks, .links = k->v, .nlinks = k->n, .links_cap = k->cap};
    int rc = nsc_diag_fetch_pages(f->src, "ledger", lq, NULL, on_fold, &p);
    k->v = p.links, k->n = p.nlinks, k->cap = p.links_cap;
    if (rc == NSC_DIAG_OK && links_sort(k, was, nwas))
        p.oom = 1;
    free(was);
    if (rc == NSC_DIAG_OK && p.oom) {
        snprintf(f->src->err, sizeof f->src->err, "out of memory");
        rc = NSC_DIAG_FAIL;
    }
    return rc;
}

/* The pass's links start as the carried ones (their steps copied: the
 * analysis sorts them; the times their steps began with them, so that a
 * slow link's onset below the pass's first seq stays its onset). */
static int links_seed(rc_pass *p, const nsc_rc_links *from)
{
    if (!from || !from->n)
        return 0;
    if (!(p->links = calloc(from->n, sizeof *p->links)))
        return -1;
    p->links_cap = from->n;
    for (; p->nlinks < from->n; p->nlinks++) {
        const rc_link *k = &from->v[p->nlinks];
        rc_link *d = &p->links[p->nlinks];
        *d = *k;
        d->ns = d->sorted = NULL, d->n = d->cap = 0;
        d->seed = k->sorted, d->nseed = k->n;
        if (k->n && nsc_grow_to(&d->ns, k->n, &d->cap, sizeof *d->ns, 64))
            return -1;
        memcpy(d->ns, k->ns, k->n * sizeof *k->ns);
        d->n = k->n;
    }
    return 0;
}

/* ---- one communicator ------------------------------------------------------- */

static void pass_free(rc_pass *p)
{
    links_release(p->links, p->nlinks);
    free(p->ops);
    free(p->prog);
    free(p->last_peer);
    free(p->orph);
    free(p->host);
}

/* Set up the pass and run it over the communicator's proxy events (its
 * ledger in the seq span seqs, "" for all, with the links carried from
 * below it: NULL none). */
static int pass_run(nsc_diag_src *s, rc_pass *p, nsc_rc_late *l, const char *comm, const char *qs, const char *seqs,
                    const nsc_rc_links *carried)
{
    size_t cells = (size_t)l->nranks * RC_MAX_CHANNELS * 2;
    memset(p, 0, sizeof *p);
    p->l = l;
    p->nranks = l->nranks;
    p->host = calloc((size_t)l->nranks, sizeof *p->host);
    p->prog = malloc(cells * sizeof *p->prog);
    p->last_peer = malloc(cells * sizeof *p->last_peer);
    if (!p->host || !p->prog || !p->last_peer || links_seed(p, carried)) {
        snprintf(s->err, sizeof s->err, "out of memory");
        return NSC_DIAG_FAIL;
    }
    for (size_t i = 0; i < cells; i++) {
        p->prog[i] = (rc_prog){-1, -1, 0, 0};
        p->last_peer[i] = -1;
    }
    char q[2048], lq[2048];
    snprintf(q, sizeof q, "%s", qs);
    if (nsc_qs_add(q, sizeof q, "comm", comm) || nsc_diag_qs_seqs(lq, sizeof lq, q, seqs)) {
        snprintf(s->err, sizeof s->err, "query string too long");
        return NSC_DIAG_FAIL;
    }
    int rc = nsc_diag_fetch_pages(s, "ledger", lq, NULL, on_ledger, p);
    /* a stuck collective's steps whose ProxyOp is in no record (open while
     * the job runs) are only in the raw events: from the collectives before
     * it on (rcint.h, stuck_from), not the whole job's */
    if (rc == NSC_DIAG_OK && !p->oom && l->stuck) {
        char from[24];
        snprintf(from, sizeof from, "%" PRIu64, l->stuck_from);
        if (nsc_qs_add(q, sizeof q, "type", "proxyop,proxystep") ||
            nsc_qs_add(q, sizeof q, "t0_ns", from)) {
            snprintf(s->err, sizeof s->err, "query string too long");
            return NSC_DIAG_FAIL;
        }
        rc = nsc_diag_fetch_pages(s, "timeline", q, NULL, on_event, p);
    }
    if (p->oom) {
        snprintf(s->err, sizeof s->err, "out of memory");
        rc = NSC_DIAG_FAIL;
    }
    return rc;
}

int nsc_rc_comm(nsc_findings *f, nsc_rc_late *l, const char *comm, const char *qs)
{
    rc_pass p;
    int rc = pass_run(f->src, &p, l, comm, qs, f->rc_seqs, f->mark ? f->mark->links : NULL);
    if (rc == NSC_DIAG_OK) {
        nsc_rc_check_links(f, comm, &p);
        if (l->stuck) {
            nsc_rc_place_orphans(&p);
            nsc_rc_check_stall(f, comm, &p);
        }
        nsc_rc_check_late(f, comm, &p);
    }
    pass_free(&p);
    return rc;
}

/* ---- the links document ----------------------------------------------------- */

const char *const nsc_diag_link_state_names[4] = {"few steps", "ok", "SLOW", "behind"};

double nsc_diag_link_gbps(const nsc_diag_link *k)
{
    return k->busy_ns ? (double)k->bytes / (double)k->busy_ns : 0;
}

double nsc_diag_link_ratio(const nsc_diag_links *l, const nsc_diag_link *k)
{
    return l->ref_ns ? (double)k->step_ns / (double)l->ref_ns : 0;
}

void nsc_diag_links_write_json(const nsc_diag_links *l, FILE *out)
{
    fputs("{\"job\":", out);
    nsc_json_write_str(out, l->job);
    fprintf(out, ",\"comm\":\"%s\",\"reference_step_ns\":%" PRIu64 ",\"slow_step_ns\":%" PRIu64 ",\"links\":[",
            l->comm, l->ref_ns, l->slow_ns);
    for (size_t i = 0; i < l->n; i++) {
        const nsc_diag_link *k = &l->link[i];
        fprintf(out, "%s{\"from_rank\":%d,\"from_host\":", i ? "," : "", k->src);
        nsc_json_write_str(out, k->src_host);
        fprintf(out, ",\"to_rank\":%d,\"to_host\":", k->dst);
        nsc_json_write_str(out, k->dst_host);
        fprintf(out, ",\"channel\":%u,\"steps\":%zu,\"step_ns\":%" PRIu64 ",\"bytes\":%" PRIu64
                     ",\"gbps\":%.3f,\"ratio\":%.2f,\"state\":\"%s\"}",
                k->channel, k->steps, k->step_ns, k->bytes, nsc_diag_link_gbps(k), nsc_diag_link_ratio(l, k),
                nsc_diag_link_state_names[k->state]);
    }
    fputs("]}\n", out);
}

static int by_link(const void *a, const void *b)
{
    const rc_link *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->src, y->src), NSC_CMP(x->dst, y->dst), NSC_CMP(x->channel, y->channel));
}

typedef struct rc_cand {
    const char *id;
    int64_t nranks;
} rc_cand;

/* Most ranks first, then by id. */
static int by_size(const void *a, const void *b)
{
    const rc_cand *x = a, *y = b;
    int c = NSC_CMP(y->nranks, x->nranks);
    return c ? c : strcmp(x->id, y->id);
}

/* The communicator's job, id (into out) and size from comms: `want` an id
 * or a name (the answer names its job, looked up in every job when job_qs
 * names none), or NULL for the nth of the job's by size (NSC_DIAG_NOTFOUND
 * past the last). */
static int find_comm(nsc_diag_src *s, const char *job_qs, const char *want, size_t nth, nsc_diag_links *out,
                     int64_t *nranks)
{
    char q[1024];
    snprintf(q, sizeof q, "%s", job_qs);
    if (want && nsc_qs_add(q, sizeof q, "comm", want) != 0) {
        snprintf(s->err, sizeof s->err, "communicator too long");
        return NSC_DIAG_USAGE;
    }
    nsc_doc d;
    int rc = nsc_diag_fetch_doc(s, "comms", q, &d);
    const nsc_json *root = rc == NSC_DIAG_OK ? nsc_json_root(&d.doc) : NULL, *comms = nsc_json_get(root, "comms");
    rc_cand *v = rc == NSC_DIAG_OK ? calloc(comms ? comms->count + 1u : 1u, sizeof *v) : NULL;
    size_t n = 0;
    for (const nsc_json *m = nsc_json_first(comms); v && m; m = nsc_json_next(comms, m))
        if ((v[n].id = nsc_json_str(nsc_json_get(m, "comm"))) && nsc_json_i64(nsc_json_get(m, "nranks"), &v[n].nranks) == 0)
            n++;
    if (rc == NSC_DIAG_OK && !v) {
        snprintf(s->err, sizeof s->err, "out of memory");
        rc = NSC_DIAG_FAIL;
    } else if (rc == NSC_DIAG_OK && want && n > 1) {
        snprintf(s->err, sizeof s->err, "the name \"%s\" names %zu communicators; use the id", want, n);
        rc = NSC_DIAG_USAGE;
    } else if (rc == NSC_DIAG_OK && nth >= n) {
        snprintf(s->err, sizeof s->err, "the job has no communicator");
        rc = NSC_DIAG_NOTFOUND;
    } else if (rc == NSC_DIAG_OK) {
        qsort(v, n, sizeof *v, by_size);
        snprintf(out->comm, sizeof out->comm, "%s", v[nth].id);
        const char *job = nsc_json_str(nsc_json_get(root, "job"));
        snprintf(out->job, sizeof out->job, "%s", job ? job : "");
        *nranks = v[nth].nranks;
    }
    free(v);
    nsc_doc_free(&d);
    return rc;
}

/* The pass's links as the document's rows; the hosts move over. */
static int keep_links(rc_pass *p, nsc_diag_links *out)
{
    if (p->nlinks)
        qsort(p->links, p->nlinks, sizeof *p->links, by_link);
    out->link = calloc(p->nlinks + 1, sizeof *out->link);
    if (!out->link)
        return NSC_DIAG_FAIL;
    for (size_t i = 0; i < p->nlinks; i++) {
        const rc_link *k = &p->links[i];
        out->link[i] = (nsc_diag_link){k->src, k->dst, k->channel, k->state, k->n, k->typical, k->bytes,
                                       k->busy_ns, nsc_rc_host_of(p, k->src), nsc_rc_host_of(p, k->dst)};
    }
    out->n = p->nlinks;
    out->host = p->host;
    p->host = NULL;
    return NSC_DIAG_OK;
}

/* The links of one communicator (find_comm's want and nth). */
static int links_of(nsc_diag_src *s, const char *job_qs, const char *want, size_t nth, nsc_diag_links *out)
{
    int64_t nranks = 0;
    memset(out, 0, sizeof *out);
    int rc = find_comm(s, job_qs, want, nth, out, &nranks);
    nsc_rc_late *l = rc == NSC_DIAG_OK ? nsc_rc_late_new(nranks) : NULL;
    if (rc == NSC_DIAG_OK && !l) {
        snprintf(s->err, sizeof s->err, "out of memory");
        rc = NSC_DIAG_FAIL;
    }
    char q[512] = "";
    if (rc == NSC_DIAG_OK && nsc_qs_add(q, sizeof q, "job", out->job) != 0) {
        snprintf(s->err, sizeof s->err, "job name too long");
        rc = NSC_DIAG_FAIL;
    }
    rc_pass p = {0};
    if (rc == NSC_DIAG_OK && (rc = pass_run(s, &p, l, out->comm, q, "", NULL)) == NSC_DIAG_OK) {
        out->ref_ns = nsc_rc_link_reference(&p, &out->slow_ns);
        if ((rc = keep_links(&p, out)) != NSC_DIAG_OK)
            snprintf(s->err, sizeof s->err, "out of memory");
    }
    pass_free(&p);
    nsc_rc_late_free(l);
    return rc;
}

int nsc_diag_links_get(nsc_diag_src *s, const char *job, const char *comm, nsc_diag_links *out)
{
    char job_qs[512] = "";
    if (job && nsc_qs_add(job_qs, sizeof job_qs, "job", job) != 0) {
        memset(out, 0, sizeof *out);
        snprintf(s->err, sizeof s->err, "job name too long");
        return NSC_DIAG_USAGE;
    }
    int rc = links_of(s, job_qs, comm, 0, out);
    /* None named: the largest communicator with network steps, as a
     * communicator within one node has no links to show. */
    for (size_t nth = 1; !comm && rc == NSC_DIAG_OK && out->n == 0; nth++) {
        nsc_diag_links next;
        int more = links_of(s, job_qs, NULL, nth, &next);
        if (more == NSC_DIAG_OK && next.n) {
            nsc_diag_links_free(out);
            *out = next;
        } else {
            nsc_diag_links_free(&next);
            if (more != NSC_DIAG_OK)
                break;
        }
    }
    return rc;
}

void nsc_diag_links_free(nsc_diag_links *l)
{
    free(l->link);
    free(l->host);
    memset(l, 0, sizeof *l);
}
