/* qctx.c: the per-run context of a query: job and communicator resolution,
 * the ranks and their hosts' clock models, aligned time, the string cache. */
#include "qint.h"
#include "utc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grow.h"

int nsc_q_fail(nsc_q_ctx *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errcap, fmt, ap);
    va_end(ap);
    return code;
}

int nsc_q_store_fail(nsc_q_ctx *c, int rc)
{
    return nsc_q_fail(c, NSC_QUERY_ESTORE, "store: %s", nsc_store_strerror(rc));
}

int nsc_q_ctx_init(nsc_q_ctx *c, const nsc_query *q, nsc_store_reader *rd, nsc_q_out *out, char *err,
                   size_t errcap)
{
    memset(c, 0, sizeof *c);
    c->q = q;
    c->rd = rd;
    c->out = out;
    c->err = err;
    c->errcap = errcap;
    c->strs = calloc(Q_STRCACHE, sizeof *c->strs);
    if (!c->strs)
        return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    for (size_t i = 0; i < Q_STRCACHE; i++)
        c->strs[i].id = UINT32_MAX;
    int rc = nsc_store_wall(rd, &c->wall_ns, &c->wall_reset);
    if (rc && rc != NSC_STORE_ENOTFOUND)
        return nsc_q_store_fail(c, rc);
    c->has_wall = rc == 0;
    return 0;
}

void nsc_q_ctx_free(nsc_q_ctx *c)
{
    for (size_t i = 0; i < c->nhosts; i++) {
        if (c->hosts[i].has_model)
            nsc_clock_free(&c->hosts[i].model);
        free(c->hosts[i].doubt);
    }
    free(c->hosts);
    free(c->ranks);
    free(c->strs);
    free(c->skipped);
}

int nsc_q_comm_id(const nsc_query *q, uint64_t *id)
{
    if (strncasecmp(q->comm, "0x", 2) != 0)
        return -1;
    *id = strtoull(q->comm + 2, NULL, 16);
    return 0;
}

int nsc_q_comm_matches(const nsc_query *q, const nsc_store_comm *cm)
{
    uint64_t id;
    return nsc_q_comm_id(q, &id) == 0 ? id == cm->comm_id : strcmp(q->comm, cm->name) == 0;
}

int nsc_q_after_cursor(const nsc_query *q, uint64_t a, uint64_t b, uint64_t c)
{
    if (!(q->has & QP_CURSOR))
        return 1;
    if (a != q->cursor[0])
        return a > q->cursor[0];
    if (b != q->cursor[1])
        return b > q->cursor[1];
    return c > q->cursor[2];
}

/* The communicators of job that the comm parameter names: how many, the
 * first in *first (when first is not NULL), and how many the job has. */
static int comm_hits(nsc_q_ctx *c, uint32_t job, nsc_store_comm *first, size_t *hits, size_t *total)
{
    nsc_store_comm *comms;
    size_t n;
    int rc = nsc_store_comms(c->rd, job, &comms, &n);
    if (rc)
        return nsc_q_store_fail(c, rc);
    *hits = 0;
    for (size_t i = 0; i < n; i++)
        if ((!(c->q->has & QP_COMM) || nsc_q_comm_matches(c->q, &comms[i])) && (*hits)++ == 0 && first)
            *first = comms[i];
    *total = n;
    free(comms);
    return 0;
}

/* Without a job parameter a communicator is looked up in every job: the
 * emulator (and a rerun of one script) gives the same id to the
 * communicators of different jobs, so more than one job is an error that
 * names them, never a silent pick. None: the latest job (whose lookup then
 * fails with "in any job"). */
static int job_of_comm(nsc_q_ctx *c, const nsc_store_job *jobs, size_t n, const nsc_store_job **pick)
{
    char names[192] = "";
    size_t found = 0, used = 0;
    for (size_t i = 0; i < n; i++) {
        size_t hits, total;
        int rc = comm_hits(c, jobs[i].id, NULL, &hits, &total);
        if (rc)
            return rc;
        if (!hits)
            continue;
        if (found++ == 0)
            *pick = &jobs[i];
        if (used < sizeof names)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s\"%s\"", used ? ", " : "",
                                     jobs[i].name);
    }
    if (found > 1)
        return nsc_q_fail(c, NSC_QUERY_EPARAM, "comm: %s is in %zu jobs (%s); name one with job (--job)",
                          c->q->comm, found, names);
    return 0;
}

int nsc_q_resolve_job(nsc_q_ctx *c)
{
    nsc_store_job *jobs;
    size_t n;
    int rc = nsc_store_jobs(c->rd, &jobs, &n);
    if (rc)
        return nsc_q_store_fail(c, rc);
    const nsc_store_job *pick = NULL;
    for (size_t i = 0; i < n; i++)
        if (!(c->q->has & QP_JOB) || strcmp(jobs[i].name, c->q->job) == 0)
            pick = &jobs[i]; /* without a name: the last created */
    if (!(c->q->has & QP_JOB) && (c->q->has & QP_COMM))
        rc = job_of_comm(c, jobs, n, &pick);
    if (pick) {
        c->job = pick->id;
        memcpy(c->job_name, pick->name, sizeof c->job_name);
    }
    free(jobs);
    if (pick || rc)
        return rc;
    if (c->q->has & QP_JOB)
        return nsc_q_fail(c, NSC_QUERY_ENOTFOUND, "no job \"%s\" in the store", c->q->job);
    return nsc_q_fail(c, NSC_QUERY_ENOTFOUND, "the store holds no job yet");
}

int nsc_q_rank_selected(const nsc_query *q, int32_t rank)
{
    if (!(q->has & QP_RANK))
        return 1;
    for (size_t i = 0; i < q->nranges; i++)
        if (rank >= q->ranks[i].lo && rank <= q->ranks[i].hi)
            return 1;
    return 0;
}

void nsc_q_rank_window(const nsc_query *q, int32_t *lo, int32_t *hi)
{
    *lo = 0;
    *hi = INT32_MAX;
    for (size_t i = 0; i < q->nranges; i++) {
        *lo = i == 0 || q->ranks[i].lo < *lo ? q->ranks[i].lo : *lo;
        *hi = i == 0 || q->ranks[i].hi > *hi ? q->ranks[i].hi : *hi;
    }
}

static int rank_cmp(const void *key, const void *elem)
{
    int32_t a = *(const int32_t *)key, b = ((const nsc_q_rank *)elem)->rank;
    return (a > b) - (a < b);
}

const nsc_q_rank *nsc_q_rank_of(const nsc_q_ctx *c, int32_t rank)
{
    return c->nranks ? bsearch(&rank, c->ranks, c->nranks, sizeof *c->ranks, rank_cmp) : NULL;
}

/* The doubt range of each backward step of h's model. A step starts segment
 * i at the first probe off the old line; the host read [H - J, start) after
 * stepping back by J from H, and the old line aligns those times J early.
 * H is after the old segment's last inlier, so the range is within
 * [last inlier - J, start). Segments that follow without a step (a full
 * segment's successor) join within the step threshold and have none. */
static int find_doubt(nsc_q_ctx *c, nsc_q_host *h)
{
    const nsc_clock_model *m = &h->model;
    for (size_t i = 1; i < m->nsegs; i++) {
        uint64_t start = m->segs[i].start_ns, last = m->segs[i - 1].last_ns, before, after;
        nsc_clock_host_to_ref(m, start - 1, &before, NULL);
        nsc_clock_host_to_ref(m, start, &after, NULL);
        int64_t jump = (int64_t)(after - before) - 1; /* the new offset minus the old */
        if (jump <= (int64_t)m->cfg.step_ns)
            continue;
        if (nsc_grow(&h->doubt, h->ndoubt, &h->doubt_cap, sizeof *h->doubt, 4))
            return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
        uint64_t lo = last < start ? last : start;
        h->doubt[h->ndoubt++] = (nsc_q_doubt){lo > (uint64_t)jump ? lo - (uint64_t)jump : 0, start};
    }
    return 0;
}

int nsc_q_host_index(nsc_q_ctx *c, const char *name, int *out)
{
    for (size_t i = 0; i < c->nhosts; i++)
        if (strcmp(c->hosts[i].name, name) == 0) {
            *out = (int)i;
            return 0;
        }
    if (nsc_grow(&c->hosts, c->nhosts, &c->hosts_cap, sizeof *c->hosts, 4))
        return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    nsc_q_host *h = &c->hosts[c->nhosts];
    memset(h, 0, sizeof *h);
    snprintf(h->name, sizeof h->name, "%s", name);
    int rc = nsc_store_get_clock(c->rd, name, &h->model);
    if (rc && rc != NSC_STORE_ENOTFOUND)
        return nsc_q_store_fail(c, rc);
    h->has_model = rc == 0 && h->model.nsegs > 0;
    if (rc == 0 && !h->has_model)
        nsc_clock_free(&h->model);
    *out = (int)c->nhosts++;
    return h->has_model ? find_doubt(c, h) : 0;
}

static int load_ranks(nsc_q_ctx *c)
{
    nsc_store_rank_entry *all;
    size_t n;
    int rc = nsc_store_comm_ranks(c->rd, c->job, c->comm.comm_id, &all, &n);
    if (rc)
        return nsc_q_store_fail(c, rc);
    c->ranks = calloc(n ? n : 1, sizeof *c->ranks);
    if (!c->ranks) {
        free(all);
        return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    }
    for (size_t i = 0; !rc && i < n; i++) {
        if (!nsc_q_rank_selected(c->q, all[i].rank))
            continue;
        nsc_q_rank *r = &c->ranks[c->nranks++];
        r->rank = all[i].rank;
        r->info = all[i].info;
        rc = nsc_q_host_index(c, r->info.host, &r->host);
    }
    free(all);
    if (!rc && (c->q->has & QP_RANK) && c->nranks == 0)
        return nsc_q_fail(c, NSC_QUERY_ENOTFOUND, "rank: no such rank in communicator 0x%llx (its ranks: 0-%d)",
                          (unsigned long long)c->comm.comm_id, c->comm.nranks - 1);
    return rc;
}

int nsc_q_comm_missing(nsc_q_ctx *c)
{
    if (c->q->has & QP_JOB)
        return nsc_q_fail(c, NSC_QUERY_ENOTFOUND, "no communicator %s in job \"%s\"", c->q->comm, c->job_name);
    return nsc_q_fail(c, NSC_QUERY_ENOTFOUND, "no communicator %s in any job", c->q->comm);
}

/* Without a comm parameter the job's only communicator is meant. */
int nsc_q_resolve_comm(nsc_q_ctx *c)
{
    size_t hits, total;
    int rc = comm_hits(c, c->job, &c->comm, &hits, &total);
    if (rc)
        return rc;
    if (!(c->q->has & QP_COMM) && total == 0)
        return nsc_q_fail(c, NSC_QUERY_ENOTFOUND, "job \"%s\" has no communicator", c->job_name);
    if (!(c->q->has & QP_COMM) && total > 1)
        return nsc_q_fail(c, NSC_QUERY_EPARAM, "comm: required: job \"%s\" has %zu communicators (see comms)",
                          c->job_name, total);
    if (hits == 0)
        return nsc_q_comm_missing(c);
    if (hits > 1)
        return nsc_q_fail(c, NSC_QUERY_EPARAM, "comm: the name \"%s\" names %zu communicators; use the id",
                          c->q->comm, hits);
    return load_ranks(c);
}

const char *nsc_q_text(nsc_q_ctx *c, uint32_t id)
{
    if (id == 0)
        return "";
    nsc_q_strc *e = &c->strs[id % Q_STRCACHE];
    if (e->id != id) {
        if (nsc_store_str(c->rd, id, e->text, sizeof e->text))
            e->text[0] = 0;
        e->id = id;
    }
    return e->text;
}

void nsc_q_cause_apply(const nsc_q_host *h, uint64_t host_ns, uint64_t *ref, uint64_t *err)
{
    if (h->cause != NSC_Q_CAUSE_NARROWED || nsc_clock_segment_for(&h->model, host_ns) != h->cause_seg)
        return;
    double w = h->cause_drift * (double)(host_ns > h->cause_ref ? host_ns - h->cause_ref : h->cause_ref - host_ns);
    double lo = fmax(h->cause_lo - w, -(double)*err), hi = fmin(h->cause_hi + w, (double)*err);
    if (lo > hi)
        return;
    /* the truth is within [aligned - hi, aligned - lo]: its middle, and the
     * bound to the farther end after rounding */
    int64_t shift = (int64_t)llround((lo + hi) / 2);
    *ref -= (uint64_t)shift;
    *err = (uint64_t)ceil(fmax(hi - (double)shift, (double)shift - lo));
}

uint64_t nsc_q_align(const nsc_q_ctx *c, const nsc_q_rank *r, uint64_t host_ns, uint64_t *err_ns)
{
    const nsc_q_host *h = &c->hosts[r->host];
    uint64_t ref = host_ns, err = 0;
    if (h->has_model && nsc_clock_host_to_ref(&h->model, host_ns, &ref, &err))
        ref = host_ns, err = 0;
    else if (h->has_model)
        nsc_q_cause_apply(h, host_ns, &ref, &err);
    if (err_ns)
        *err_ns = err;
    return ref;
}

typedef struct rank_of_ctx {
    const nsc_q_ctx *c;
    const nsc_q_rank *r;
} rank_of_ctx;

static uint64_t align_fwd(const void *arg, uint64_t host_ns)
{
    const rank_of_ctx *a = arg;
    return nsc_q_align(a->c, a->r, host_ns, NULL);
}

uint64_t nsc_q_unalign(const nsc_q_ctx *c, const nsc_q_rank *r, uint64_t aligned_ns)
{
    rank_of_ctx a = {c, r};
    return nsc_clock_invert(align_fwd, &a, aligned_ns);
}

void nsc_q_raw_window(const nsc_q_ctx *c, const nsc_q_rank *r, uint64_t t0, uint64_t t1, uint64_t *h0,
                      uint64_t *h1)
{
    const uint64_t margin = NSC_CLOCK_INVERT_SLACK_NS;
    *h0 = t0 == 0 ? 0 : nsc_q_unalign(c, r, t0);
    *h0 = *h0 > margin ? *h0 - margin : 0;
    *h1 = t1 == UINT64_MAX ? UINT64_MAX : nsc_q_unalign(c, r, t1);
    *h1 = *h1 < UINT64_MAX - margin ? *h1 + margin : UINT64_MAX;
}

/* Note damaged block k, once (a query may read a rank's blocks twice). */
static int note_skipped(nsc_q_ctx *c, const nsc_block_key *k, const char *damage)
{
    for (size_t i = 0; i < c->nskipped; i++) {
        const nsc_block_key *o = &c->skipped[i].key;
        if (o->job == k->job && o->comm == k->comm && o->rank == k->rank && o->start_ns == k->start_ns &&
            o->seq == k->seq)
            return 0;
    }
    if (nsc_grow(&c->skipped, c->nskipped, &c->skipped_cap, sizeof *c->skipped, 4))
        return -1;
    c->skipped[c->nskipped++] = (nsc_q_skip){*k, damage};
    return 0;
}

int nsc_q_next_block(nsc_q_ctx *c, const nsc_q_rank *r, nsc_store_blocks *it, uint32_t types, unsigned parts,
                     nsc_block_key *key, nsc_block *blk)
{
    int rc;
    if (c->q->stop && atomic_load(c->q->stop))
        return NSC_QUERY_EWRITE;  /* nsc_query_run says why */
    while ((rc = nsc_store_blocks_next_sel(it, types, parts, key, blk)) == NSC_STORE_EBLOCK)
        if (note_skipped(c, key, nsc_store_blocks_damage(it)))
            return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    if (rc == 0 || rc == 1)
        return rc;
    return nsc_q_fail(c, NSC_QUERY_ESTORE, "store: reading the blocks of rank %d: %s", r->rank,
                      nsc_store_strerror(rc));
}

void nsc_q_write_skipped(nsc_q_ctx *c)
{
    if (!c->nskipped)
        return;
    nsc_q_lit(c->out, ",\"skipped_blocks\":[");
    for (size_t i = 0; i < c->nskipped; i++) {
        const nsc_block_key *k = &c->skipped[i].key;
        nsc_q_cs(c->out, i ? ",{\"comm\":" : "{\"comm\":");
        nsc_q_hex(c->out, k->comm);
        nsc_q_lit(c->out, ",\"rank\":");
        nsc_q_i64(c->out, k->rank);
        nsc_q_lit(c->out, ",\"start_ns\":");
        nsc_q_u64(c->out, k->start_ns);
        nsc_q_lit(c->out, ",\"seq\":");
        nsc_q_u64(c->out, k->seq);
        nsc_q_lit(c->out, ",\"error\":");
        nsc_q_str(c->out, c->skipped[i].damage);
        nsc_q_lit(c->out, "}");
    }
    nsc_q_lit(c->out, "]");
}

/* Up to max blocks of it (rank r's) through fn, the events of types only;
 * with skip, those whose records all end before h0 stepped over
 * undecoded. Closes it. */
static int each_block(nsc_q_ctx *c, const nsc_q_rank *r, nsc_store_blocks *it, uint32_t types, size_t max, int skip,
                      uint64_t h0, nsc_q_block_fn fn, void *arg)
{
    nsc_block_key key;
    nsc_block blk;
    int rc = 0;
    for (size_t b = 0; b < max; b++) {
        if (skip && (rc = nsc_store_blocks_skip_before(it, h0)) != 0) {
            rc = nsc_q_store_fail(c, rc);
            break;
        }
        if ((rc = nsc_q_next_block(c, r, it, types, 0, &key, &blk)) != 0)
            break;
        rc = fn(c, r, &blk, arg);
        nsc_block_release(&blk);
        if (rc)
            break;
    }
    nsc_store_blocks_close(it);
    return rc == 1 ? 0 : rc;
}

/* The blocks of rank r in the window, up to max: their events only (the
 * readers of these, topology, read no states nor completions, which would
 * cost a pass over a running job's raw events as many decodes as it has
 * states). */
int nsc_q_rank_blocks(nsc_q_ctx *c, const nsc_q_rank *r, size_t max, nsc_q_block_fn fn, void *arg)
{
    uint64_t h0, h1;
    nsc_q_raw_window(c, r, c->q->t0, c->q->t1, &h0, &h1);
    nsc_store_blocks *it;
    int rc = nsc_store_blocks_open(c->rd, c->job, c->comm.comm_id, r->rank, h0, h1, &it);
    return rc ? nsc_q_store_fail(c, rc) : each_block(c, r, it, NSC_MASK_ALL, max, 0, h0, fn, arg);
}

int nsc_q_rank_p2p_blocks(nsc_q_ctx *c, const nsc_q_rank *r, nsc_q_block_fn fn, void *arg)
{
    uint64_t h0, h1;
    nsc_q_raw_window(c, r, c->q->t0, c->q->t1, &h0, &h1);
    nsc_store_blocks *it;
    int rc = nsc_store_p2p_blocks_open(c->rd, c->job, c->comm.comm_id, r->rank, h0, h1, &it);
    if (rc)
        return nsc_q_store_fail(c, rc);
    return each_block(c, r, it, 1u << NSC_T_P2P, SIZE_MAX, 1, h0, fn, arg);
}

void nsc_q_align_span(const nsc_q_ctx *c, const nsc_q_rank *r, uint64_t h0, uint64_t h1, nsc_clock_span *sp)
{
    const nsc_q_host *h = &c->hosts[r->host];
    if (h->has_model && h->cause != NSC_Q_CAUSE_NARROWED)
        nsc_clock_span_of(&h->model, h0, h1, sp);
    else if (h->has_model) /* narrowed: the offset moves with the time */
        *sp = (nsc_clock_span){.h0 = h0, .h1 = h1};
    else /* identity */
        *sp = (nsc_clock_span){.h0 = 0, .h1 = UINT64_MAX, .exact = 1};
}

uint64_t nsc_q_gpu_seen(const nsc_q_ctx *c, const nsc_q_rank *r, const nsc_clock_span *sp, const nsc_event *ev)
{
    uint64_t seen = ev->d.kernel_ch.ptimer_stop_ns;
    if (!ev->d.kernel_ch.ptimer_stop || !seen)
        return 0;
    const nsc_q_host *h = &c->hosts[r->host];
    for (size_t i = 0; i < h->ndoubt; i++)
        if (seen >= h->doubt[i].lo && seen < h->doubt[i].hi)
            return 0;
    return sp ? nsc_q_align_in(c, r, sp, seen, NULL) : nsc_q_align(c, r, seen, NULL);
}

int nsc_q_gpu_pair(nsc_q_ctx *c, const nsc_q_rank *r, nsc_gpuclock *g, const nsc_clock_span *sp,
                   const nsc_event *ev)
{
    uint64_t seen = nsc_q_gpu_seen(c, r, sp, ev);
    if (seen && nsc_gpuclock_add(g, ev->d.kernel_ch.ptimer_stop, seen) < 0)
        return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    return 0;
}

/* The host model's bound at the host time that aligns to a: inside sp that
 * time is a - add; elsewhere the model is inverted. */
static uint64_t host_err_at(const nsc_q_ctx *c, const nsc_q_rank *r, const nsc_clock_span *sp, uint64_t a)
{
    uint64_t err;
    if (sp && sp->exact && a - sp->add >= sp->h0 && a - sp->add <= sp->h1)
        return sp->err_ns;
    nsc_q_align(c, r, nsc_q_unalign(c, r, a), &err);
    return err;
}

int nsc_q_gpu_align(const nsc_q_ctx *c, const nsc_q_rank *r, const nsc_gpuclock *g, const nsc_clock_span *sp,
                    uint64_t ptimer, uint64_t *aligned, uint64_t *err_ns)
{
    uint64_t gerr;
    if (ptimer == 0 || nsc_gpuclock_to_cpu(g, ptimer, aligned, &gerr))
        return -1;
    *err_ns = gerr + host_err_at(c, r, sp, *aligned);
    return 0;
}

void nsc_q_write_comm(nsc_q_out *o, const nsc_store_comm *m)
{
    nsc_q_lit(o, "\"comm\":");
    nsc_q_hex(o, m->comm_id);
    nsc_q_lit(o, ",\"name\":");
    nsc_q_str(o, m->name);
    nsc_q_lit(o, ",\"nranks\":");
    nsc_q_i64(o, m->nranks);
}

void nsc_q_write_wall(nsc_q_ctx *c)
{
    if (!c->has_wall)
        return;
    nsc_q_lit(c->out, ",\"wall_offset_ns\":");
    nsc_q_i64(c->out, c->wall_ns);
    if (c->wall_reset)
        nsc_q_lit(c->out, ",\"wall_clock_reset\":true");
}

void nsc_q_write_utc(nsc_q_ctx *c, const char *key, int known, uint64_t t_ns)
{
    char utc[NSC_UTC_MAX];
    nsc_q_cs(c->out, ",\"");
    nsc_q_cs(c->out, key);
    nsc_q_cs(c->out, "\":");
    if (!known || !c->has_wall) {
        nsc_q_lit(c->out, "null");
        return;
    }
    nsc_utc_iso((int64_t)t_ns + c->wall_ns, utc, sizeof utc);
    nsc_q_str(c->out, utc);
}

void nsc_q_write_comm_head(nsc_q_ctx *c)
{
    nsc_q_lit(c->out, "\"job\":");
    nsc_q_str(c->out, c->job_name);
    nsc_q_write_wall(c);
    nsc_q_lit(c->out, ",");
    nsc_q_write_comm(c->out, &c->comm);
}
