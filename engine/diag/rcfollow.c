/* rcfollow.c: late ranks followed across communicators (rcint.h). Each
 * communicator's analysis (rclate.c) names the rank that arrived last of
 * its own there; but a rank's communicators share its stream, so a rank late
 * in one communicator because its work in another ended late is not late of
 * its own. The ledger of every communicator (api, done, GPU start per rank
 * and collective, Send/Recv included) gives each process one timeline: its
 * own time before a collective is what its host took after its previous
 * work on any communicator ended, plus what its GPU took after both
 * (rcown.c). A late rank's problem stands when that own time explains its
 * lateness often enough (stands_for()); the others inherit the delay, and
 * the wait they were stuck in is followed back, rank to rank, to the
 * process whose own time it was: their problems become that origin's
 * affected list. One
 * process late of its own in several communicators is one verdict, its
 * costs summed. A Send/Recv is met with the same one of the other pipelines
 * (else with its peer's): a side whose host's gap goes beyond theirs on a
 * beat is late of its own there, whatever it cost (rcpairs.c, rcbeats.c);
 * so is a collective's rank whose own time goes beyond its ranks' on a
 * beat, or its GPU's throughout, hidden behind ranks later still
 * (rcbeats.c). Memory: one record per rank and collective (96 bytes). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figures.h"
#include "grow.h"
#include "order.h"
#include "qs.h"
#include "rcfw.h"
#include "rcint.h"
#include "statusdoc.h"

/* Hops followed from a waiting rank to the one it waited for. */
#define FW_MAX_HOPS 32

nsc_rc_follow *nsc_rc_follow_new(void)
{
    return calloc(1, sizeof(nsc_rc_follow));
}

void nsc_rc_follow_free(nsc_rc_follow *w)
{
    if (!w)
        return;
    free(w->c);
    free(w->who_of);
    free(w->who);
    free(w->r);
    free(w);
}

/* The process of a rank: a known one by host and pid, else a new one. */
static uint32_t who_index(nsc_rc_follow *w, const char *key)
{
    for (size_t i = 0; key[0] && i < w->nwho; i++)
        if (strcmp(w->who[i], key) == 0)
            return (uint32_t)i;
    if (nsc_grow(&w->who, w->nwho, &w->who_cap, sizeof *w->who, 64)) {
        w->oom = 1;
        return 0;
    }
    snprintf(w->who[w->nwho], sizeof w->who[0], "%s", key);
    return (uint32_t)w->nwho++;
}

/* The communicator's ranks' processes, from the live state's comm entry. */
static void add_ranks(nsc_rc_follow *w, const fw_comm *c, const nsc_json *status, const char *job)
{
    const nsc_json *comms = nsc_json_get(nsc_status_job(status, job), "comms"), *ranks = NULL;
    for (const nsc_json *m = nsc_json_first(comms); m && !ranks; m = nsc_json_next(comms, m))
        if (nsc_json_str(nsc_json_get(m, "comm")) && strcmp(nsc_json_str(nsc_json_get(m, "comm")), c->id) == 0)
            ranks = nsc_json_get(m, "ranks");
    for (int64_t k = 0; k < c->nranks; k++) {
        char key[80] = "";
        for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r))
            if (nsc_diag_num(r, "rank") == (uint64_t)k && nsc_json_str(nsc_json_get(r, "host")))
                snprintf(key, sizeof key, "%s %" PRIu64, nsc_json_str(nsc_json_get(r, "host")), nsc_diag_num(r, "pid"));
        w->who_of[c->first + (size_t)k] = who_index(w, key);
    }
}

typedef struct fw_load {
    nsc_rc_follow *w;
    uint32_t comm;
} fw_load;

static int on_record(void *arg, const nsc_json *v, const char *line, size_t len)
{
    (void)line, (void)len;
    fw_load *ld = arg;
    nsc_rc_follow *w = ld->w;
    const fw_comm *c = &w->c[ld->comm];
    const char *kind = nsc_json_str(nsc_json_get(v, "kind")), *func = nsc_json_str(nsc_json_get(v, "func"));
    const char *state = nsc_json_str(nsc_json_get(v, "state"));
    uint64_t rank = nsc_diag_num(v, "rank");
    if (!kind || strcmp(kind, "record") != 0 || !func || !state || strcmp(state, "completed") != 0 ||
        rank >= (uint64_t)c->nranks)
        return 0;
    if (nsc_grow(&w->r, w->n, &w->cap, sizeof *w->r, 1024)) {
        w->oom = 1;
        return 1;
    }
    int p2p = strcmp(func, "Send") == 0 ? 1 : strcmp(func, "Recv") == 0 ? 2 : 0;
    /* its end on the device: its host may notice it milliseconds later */
    uint64_t end = nsc_diag_num(v, "gpu_end_ns");
    w->r[w->n++] = (fw_rec){nsc_diag_num(v, "seq"), nsc_diag_num(v, "api_ns"), end ? end : nsc_diag_num(v, "done_ns"),
                            nsc_diag_num(v, "gpu_start_ns"), 0, 0, 0, 0, -1, ld->comm, w->who_of[c->first + rank],
                            0, (int32_t)rank, (int32_t)nsc_diag_num_or(v, "peer", -1), (uint8_t)p2p, 0, 0, 0};
    return 0;
}

int nsc_rc_follow_comm(nsc_findings *f, nsc_rc_follow *w, const char *comm, int64_t nranks, const char *qs)
{
    if (nranks <= 0 || nranks > (1 << 20) || nsc_grow(&w->c, w->nc, &w->c_cap, sizeof *w->c, 16)) {
        w->oom = nranks > 0;
        return NSC_DIAG_OK;
    }
    if (nsc_grow_to(&w->who_of, w->nwho_of + (size_t)nranks, &w->who_of_cap, sizeof *w->who_of, 256)) {
        w->oom = 1;
        return NSC_DIAG_OK;
    }
    fw_comm *c = &w->c[w->nc];
    snprintf(c->id, sizeof c->id, "%s", comm);
    c->nranks = nranks;
    c->first = w->nwho_of;
    w->nwho_of += (size_t)nranks;
    add_ranks(w, c, f->status, f->job);
    char q[2048], lq[2048];
    snprintf(q, sizeof q, "%s", qs);
    if (nsc_qs_add(q, sizeof q, "comm", comm) || nsc_diag_qs_seqs(lq, sizeof lq, q, f->seqs)) {
        snprintf(f->src->err, sizeof f->src->err, "query string too long");
        return NSC_DIAG_FAIL;
    }
    fw_load ld = {w, (uint32_t)w->nc++};
    return nsc_diag_fetch_pages(f->src, "ledger", lq, NULL, on_record, &ld);
}

/* ---- following a wait to its origin ------------------------------------------ */

/* The process's latest record that started by t, or -1 (the records are
 * by process, then start). */
static int64_t record_at(const nsc_rc_follow *w, uint32_t who, uint64_t t)
{
    size_t lo = 0, hi = w->n;
    while (lo < hi) {  /* the first record after (who, t) */
        size_t mid = lo + (hi - lo) / 2;
        const fw_rec *x = &w->r[mid];
        if (x->who < who || (x->who == who && x->api <= t))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && w->r[lo - 1].who == who ? (int64_t)lo - 1 : -1;
}

/* The origin the wait before record k leads to: the process its previous
 * work waited for (a collective's last arrival, a Send/Recv's peer), then
 * what that one was doing when it let it go, and so on; -1 if none. */
static int64_t origin_of(const nsc_rc_follow *w, int64_t k, const uint8_t *origin)
{
    for (int hop = 0; hop < FW_MAX_HOPS && k >= 0; hop++) {
        const fw_rec *x = &w->r[k];
        if (x->blocker < 0)
            return -1;
        const fw_rec *b = &w->r[x->blocker];
        const fw_comm *c = &w->c[b->comm];
        uint32_t y = b->p2p ? (b->peer >= 0 && b->peer < c->nranks ? w->who_of[c->first + (size_t)b->peer] : x->who)
                            : b->last_who;
        if (origin[y])
            return y;
        if (y == x->who)
            return -1;
        k = record_at(w, y, b->done);
    }
    return -1;
}

/* ---- the verdicts ---------------------------------------------------------------- */

/* A late rank's problem, as the follow sees it. */
typedef struct fw_late {
    nsc_problem *p;
    uint32_t comm, who;
    int stands;
    int64_t origin;  /* an inherited one's origin process, -1 none */
    uint64_t onset_ns, own_cost_ns, every;
    uint64_t own_late;  /* its collectives late of its own, as its communicator's analysis counted */
    uint64_t onset_seq, beats;  /* its onset, and its collectives on its beat since, when intermittent */
    int hidden;                 /* made on the timeline, hidden behind ranks later still (rcbeats.c) */
} fw_late;

static int is_late(const nsc_problem *p)
{
    return strcmp(p->kind, "host_late") == 0 || strcmp(p->kind, "gpu_late") == 0;
}

/* The onset, own cost and frequency rclate.c wrote in the figures. */
static void late_figures(fw_late *x)
{
    char buf[sizeof x->p->figures + 2];
    snprintf(buf, sizeof buf, "{%s}", x->p->figures);
    nsc_json_doc d;
    nsc_json_error e;
    if (nsc_json_parse(buf, strlen(buf), NULL, &d, &e))
        return;
    const nsc_json *o = nsc_json_root(&d);
    x->onset_ns = nsc_diag_num(o, "onset_ns");
    x->own_cost_ns = nsc_diag_num(o, "own_cost_ns");
    x->every = nsc_diag_num(o, "every");
    x->own_late = nsc_diag_num(o, "late_of_its_own");
    x->onset_seq = nsc_diag_num(o, "onset_seq");
    x->hidden = nsc_json_get(o, "hidden_beats") != NULL;
    uint64_t since = nsc_diag_num(o, "collectives") - x->onset_seq;
    x->beats = x->every >= 2 && since <= nsc_diag_num(o, "collectives") ? (since + x->every - 1) / x->every : 0;
    nsc_json_free(&d);
}

/* The rank of a process in the largest communicator it is in. */
static int64_t world_rank(const nsc_rc_follow *w, uint32_t who)
{
    int64_t best = -1, size = 0;
    for (size_t c = 0; c < w->nc; c++)
        for (int64_t k = 0; k < w->c[c].nranks; k++)
            if (w->who_of[w->c[c].first + (size_t)k] == who && w->c[c].nranks > size)
                best = k, size = w->c[c].nranks;
    return best;
}

/* Append to buf (n used of cap); -1, nothing appended, when it does not fit. */
static int put(char *buf, size_t cap, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int put(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *n, cap - *n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= cap - *n) {
        buf[*n] = 0;
        return -1;
    }
    *n += (size_t)k;
    return 0;
}

/* The origin most of an inherited problem's late collectives lead to. */
static int64_t vote_origin(const nsc_rc_follow *w, const fw_late *x, const uint8_t *origin, uint32_t *votes)
{
    memset(votes, 0, w->nwho * sizeof *votes);
    int64_t best = -1;
    size_t seen = 0;
    for (size_t i = 0; i < w->n && seen < RC_FOLLOW_VOTES; i++) {
        const fw_rec *r = &w->r[i];
        if (!r->late_last || r->comm != x->comm || r->who != x->who)
            continue;
        seen++;
        int64_t o = origin_of(w, (int64_t)i, origin);
        if (o >= 0 && (++votes[o], best < 0 || votes[o] > votes[best]))
            best = o;
    }
    return best;
}

/* The verdict's figures with keys[0..n) set to vals (rclate.c's are
 * numbers only); 0, or -1 when they did not fit (unchanged). */
static int set_figures(nsc_problem *p, const char *const *keys, const uint64_t *vals, size_t n)
{
    char in[sizeof p->figures + 2], out[sizeof p->figures];
    snprintf(in, sizeof in, "{%s}", p->figures);
    nsc_json_doc d;
    nsc_json_error e;
    if (nsc_json_parse(in, strlen(in), NULL, &d, &e))
        return -1;
    const nsc_json *o = nsc_json_root(&d);
    size_t used = 0, k;
    int full = 0;
    for (const nsc_json *m = nsc_json_first(o); m && !full; m = nsc_json_next(o, m)) {
        for (k = 0; k < n && strcmp(m->key, keys[k]) != 0; k++)
            ;
        if (m->kind == NSC_JSON_NUMBER && k == n)
            full = put(out, sizeof out, &used, "%s\"%s\":%s", used ? "," : "", m->key, m->text);
    }
    for (k = 0; k < n && !full; k++)
        full = put(out, sizeof out, &used, "%s\"%s\":%" PRIu64, used ? "," : "", keys[k], vals[k]);
    if (!full)
        memcpy(p->figures, out, used + 1);
    nsc_json_free(&d);
    return full ? -1 : 0;
}

/* The verdict's figures with the onset moved to record k's collective and
 * its frequency counted from there. */
static void set_onset(nsc_problem *p, const fw_rec *k, uint64_t every)
{
    static const char *const keys[] = {"onset_seq", "onset_ns", "every"};
    if (set_figures(p, keys, (uint64_t[]){k->seq, k->api, every}, 3) == 0)
        p->seq = k->seq;
}

/* The process's collectives on an intermittent verdict's beat (every >= 2)
 * from record `on` on where it arrived last of its own, or where a rank
 * later still hid it, its own time beyond the others' all the same (a
 * late host at each step's start hidden at half of them: counting only
 * where it was last counts where a loaded machine added to its delay,
 * 6.2 to 6.8 ms a step of its 4): their records' indices into idx; how
 * many. */
static size_t beat_hits(const nsc_rc_follow *w, const fw_late *x, int64_t on, uint64_t *idx)
{
    size_t n = 0;
    uint64_t nth = 0;
    for (size_t i = (size_t)on; x->every >= 2 && i < w->n && w->r[i].who == x->who; i++) {
        const fw_rec *r = &w->r[i];
        if (r->comm == x->comm && !r->p2p && nth++ % x->every == 0 &&
            (r->own_late || (!r->late_last && r->excess >= NSC_FIG_LATE_MIN_NS)))
            idx[n++] = i;
    }
    return n;
}

/* Twice the lower median of the n records idx[]'s own time beyond the
 * others' (or, waits, of the others' waits for those they waited for: a
 * verdict made on the timeline has hits where a rank later still hid it);
 * v: n scratch. */
static uint64_t twice_median(const nsc_rc_follow *w, const uint64_t *idx, size_t n, int waits, uint64_t *v)
{
    size_t m = 0;
    for (size_t j = 0; j < n; j++)
        if (!waits || w->r[idx[j]].waited)
            v[m++] = waits ? w->r[idx[j]].waited : w->r[idx[j]].excess;
    return 2 * nsc_rc_median(v, m);
}

/* An intermittent verdict's own cost: only its beat's hits (beat_hits),
 * what its host and GPU took there beyond the others and how long the
 * others waited for it, each hit's at most twice the hits' median, into x
 * and the figures, and its kind the larger share's (rclate.c's rule, on
 * these); scratch: 2 x (w->n + 1). Off the beat a loaded
 * machine's pauses make it late of its own as well, as much as any other
 * rank, and at a pipeline's Recv between its collectives it waits for
 * another stage; on it a pause adds to the fault's delay now and then (340
 * ms once at a load of 130, a 4 ms late host's median 4.1): a training
 * job's host late once a step was charged 1.6 to 4 times its delay so. */
static void beat_cost(const nsc_rc_follow *w, fw_late *x, int64_t on, uint64_t *scratch)
{
    uint64_t *idx = scratch, *v = scratch + w->n + 1, host = 0, gpu = 0, cost = 0;
    size_t n = beat_hits(w, x, on, idx);
    if (!n)
        return;
    uint64_t cap = twice_median(w, idx, n, 0, v), wcap = twice_median(w, idx, n, 1, v);
    for (size_t j = 0; j < n; j++) {
        const fw_rec *r = &w->r[idx[j]];
        uint64_t e = r->excess < cap ? r->excess : cap, h = r->host < e ? r->host : e;
        host += h, gpu += e - h, cost += r->waited < wcap ? r->waited : wcap;
    }
    static const char *const keys[] = {"late_of_its_own", "host_late_ns", "gpu_late_ns", "own_cost_ns"};
    if (set_figures(x->p, keys, (uint64_t[]){n, host, gpu, cost}, 4) != 0)
        return;
    x->own_late = n, x->own_cost_ns = cost;
    snprintf(x->p->kind, sizeof x->p->kind, "%s", gpu > host ? "gpu_late" : "host_late");
}

/* Whether problem x folds into process who's verdict: one of the process's
 * own (late in another communicator of its own, or only because its work
 * in one ended late: not counted twice), or one that inherits its delay. */
static int folds_into(const fw_late *x, uint32_t who)
{
    return x->who == who || (!x->stands && x->origin == (int64_t)who);
}

/* Whether a problem before v[i] of its communicator is one of process
 * who's own (own) or one that inherits its delay: that communicator is
 * listed and counted once. */
static int comm_before(const fw_late *v, size_t i, uint32_t who, int own)
{
    for (size_t j = 0; j < i; j++)
        if (v[j].comm == v[i].comm && (own ? v[j].who == who : v[j].who != who && folds_into(&v[j], who)))
            return 1;
    return 0;
}

/* The figures a verdict adds: the process's rank in the job's largest
 * communicator, the communicators it is late of its own in and those it
 * delayed, the ranks there that only inherit it, and its cost summed. */
static void merged_figures(const nsc_rc_follow *w, const fw_late *v, size_t nv, size_t prim, uint64_t cost,
                           uint64_t nlate, size_t naff, size_t naffc, size_t nown)
{
    const fw_late *x = &v[prim];
    nsc_problem *p = x->p;
    char buf[sizeof p->figures];
    size_t n = 0;
    int full = put(buf, sizeof buf, &n, "%s,\"world_rank\":%" PRId64 ",\"job_cost_ns\":%" PRIu64 ",\"job_late_collectives\":%" PRIu64
                   ",\"comms_of_its_own\":[",
                   p->figures, world_rank(w, x->who), cost, nlate);
    const char *sep = "";
    for (size_t i = 0; i < nv && !full; i++)
        if (v[i].who == x->who && !comm_before(v, i, x->who, 1) &&
            !(full = put(buf, sizeof buf, &n, "%s\"%s\"", sep, w->c[v[i].comm].id)))
            sep = ",";
    full = full || put(buf, sizeof buf, &n, "],\"affected\":[");
    sep = "";
    for (size_t i = 0; i < nv && !full; i++)
        if (v[i].who != x->who && folds_into(&v[i], x->who) &&
            !(full = put(buf, sizeof buf, &n, "%s{\"comm\":\"%s\",\"rank\":%" PRId64 ",\"world_rank\":%" PRId64 "}",
                         sep, w->c[v[i].comm].id, v[i].p->rank, world_rank(w, v[i].who))))
            sep = ",";
    if (!full)
        put(buf, sizeof buf, &n, "],\"affected_ranks\":%zu,\"affected_comms\":%zu,\"comms_late\":%zu", naff,
            naffc, nown);
    if (!full)
        memcpy(p->figures, buf, n + 1);
}

/* One origin's verdict: its earliest problem that stands names it, the
 * process's others fold into it (their communicators listed, the cost of
 * those that stand added), and the problems that inherit its delay become
 * its affected; scratch as beat_cost's. */
static void merge_origin(const nsc_findings *f, const nsc_rc_follow *w, fw_late *v, size_t nv, uint32_t who,
                         uint64_t *scratch)
{
    size_t prim = nv, nown = 0, naff = 0, naffc = 0;
    for (size_t i = 0; i < nv; i++) {
        if (v[i].who == who) {
            nown += !comm_before(v, i, who, 1);
            if (v[i].stands && (prim == nv || v[i].onset_ns < v[prim].onset_ns))
                prim = i;
        } else if (folds_into(&v[i], who)) {
            naff++;
            naffc += !comm_before(v, i, who, 0);
        }
    }
    if (prim == nv)
        return;
    nsc_problem *p = v[prim].p;
    /* one made on the timeline late throughout (rcbeats.c) dated itself
     * where it held from, past the pauses before */
    int64_t at = nsc_rc_coll_rec(w, who, v[prim].comm, v[prim].onset_seq);
    int64_t on = v[prim].beats ? nsc_rc_beat_start(w, at, v[prim].every)
                 : v[prim].hidden ? at
                                  : nsc_rc_onset_rec(w, who, v[prim].comm);
    /* a verdict on a beat stood by keeping it on the timeline (stands_for):
     * it keeps it, where the timeline's last arrivals late of their own
     * would not (a late host at each step's start hidden at half of them
     * by a rank later still, a loaded machine's pauses between: 1 in 7);
     * so does one made on the timeline, counted there */
    uint64_t every = on >= 0 ? v[prim].beats || v[prim].hidden ? v[prim].every : nsc_rc_every_from(w, on) : 0;
    if (every) {
        v[prim].every = every;
        set_onset(p, &w->r[on], v[prim].every);
        nsc_diag_began_ns(p, f, w->r[on].api);
        beat_cost(w, &v[prim], on, scratch);
    }
    int gpu = strcmp(p->kind, "gpu_late") == 0;
    char often[48] = "every collective";
    if (v[prim].every > 1)
        snprintf(often, sizeof often, "1 collective in %" PRIu64, v[prim].every);
    uint64_t nlate = 0, cost = 0;  /* where the others' waits summed in cost were */
    for (size_t i = 0; i < nv; i++)
        if (v[i].who == who && v[i].stands)
            nlate += v[i].own_late, cost += v[i].own_cost_ns;
    snprintf(p->text, sizeof p->text,
             "%s: rank %" PRId64 " (%.40s; world rank %" PRId64 ") late of its own since seq %" PRIu64
             " of comm %s, %s, in %zu comm(s): the others waited %.2f ms per late collective, %.1f ms in all; "
             "%zu late rank(s) in %zu comm(s) only inherit it",
             gpu ? "GPU late" : "host late", p->rank, p->hosts[0], world_rank(w, who), p->seq, p->comm, often, nown,
             (double)cost / (double)(nlate ? nlate : 1) / 1e6, (double)cost / 1e6, naff, naffc);
    merged_figures(w, v, nv, prim, cost, nlate, naff, naffc, nown);
    for (size_t i = 0; i < nv; i++)
        if (i != prim && folds_into(&v[i], who))
            v[i].p->kind[0] = 0;  /* folded in: removed below */
}

/* Whether a late rank whose lateness its own time explained at own of its
 * late collectives is late of its own: at one in RC_FOLLOW_OWN_SHARE of
 * them, and at half of them or at RC_LATE_MIN_OWN (a rank past a pipeline
 * stage's Recv on a loaded machine: its own time is hidden at half or
 * more; one that only inherits a delay: at a few of dozens). */
static int stands(uint32_t late, uint32_t own)
{
    return !late || (RC_FOLLOW_OWN_SHARE * own >= late && (2 * own >= late || own >= RC_LATE_MIN_OWN));
}

/* How many of a late rank's beat's collectives since its onset (one in
 * x->every) its own time explains: late of its own there, or its own time
 * as far beyond the others' (behind a rank later still). */
static uint64_t beat_hits_since(const nsc_rc_follow *w, const fw_late *x)
{
    uint64_t hits = 0;
    for (size_t i = 0; x->beats && i < w->n; i++) {
        const fw_rec *r = &w->r[i];
        hits += r->who == x->who && r->comm == x->comm && !r->p2p && r->seq >= x->onset_seq &&
                (r->seq - x->onset_seq) % x->every == 0 && (r->own_late || r->excess >= NSC_FIG_LATE_MIN_NS);
    }
    return hits;
}

/* Whether a late rank's problem stands, last at late of the communicator's
 * collectives, of its own at own. Late at each collective: when its own
 * time explains that often enough (stands()). Late on a beat (every 2 or
 * more): only when its own time keeps the beat, at RC_LATE_BEAT_NUM /
 * RC_LATE_BEAT_DEN of the beat's collectives since its onset, and over
 * RC_LATE_BEAT_MIN beats or with stands() (a late host at each training
 * step's start is last at several of the step's collectives after it too,
 * not of its own). A rank that waits on a slow GPU's delay at most of its
 * collectives is late of its own at a few more, a loaded machine's pauses,
 * scattered: a beat its communicator's analysis found among those is not
 * kept (a 64-rank training job with one slow GPU, the host handing groups
 * to its proxies without waiting: 0 to 12 of 23 to 32 beats, at 11 to 17
 * of 31 to 38 collectives it was last at). A Send/Recv's problem (no
 * collective) stands (rcbeats.c judged it). */
static int stands_for(const nsc_rc_follow *w, const fw_late *x, uint32_t late, uint32_t own)
{
    if (!late || x->every < 2)
        return stands(late, own);
    uint64_t hits = beat_hits_since(w, x);
    return x->beats && RC_LATE_BEAT_DEN * hits >= RC_LATE_BEAT_NUM * x->beats &&
           (x->beats >= RC_LATE_BEAT_MIN || stands(late, own));
}

/* The late-rank problems of the communicators followed, with their process
 * and whether their own time explains them. */
static size_t late_problems(nsc_findings *f, const nsc_rc_follow *w, fw_late *v, const uint32_t *late_n,
                            const uint32_t *own_n)
{
    size_t nv = 0;
    for (size_t i = 0; i < f->n; i++) {
        nsc_problem *p = &f->p[i];
        size_t c = 0;
        while (c < w->nc && strcmp(w->c[c].id, p->comm) != 0)
            c++;
        if (!is_late(p) || c == w->nc || p->rank < 0 || p->rank >= w->c[c].nranks)
            continue;
        size_t cell = w->c[c].first + (size_t)p->rank;
        v[nv] = (fw_late){p, (uint32_t)c, w->who_of[cell], 0, -1, 0, 0, 0, 0, 0, 0, 0};
        late_figures(&v[nv]);
        v[nv].stands = stands_for(w, &v[nv], late_n[cell], own_n[cell]);
        nv++;
    }
    return nv;
}

/* The late problems (late_problems), each process with one that stands
 * marked an origin. */
static size_t standing(nsc_findings *f, const nsc_rc_follow *w, fw_late *v, const uint32_t *late_n,
                       const uint32_t *own_n, uint8_t *origin)
{
    size_t nv = late_problems(f, w, v, late_n, own_n);
    for (size_t i = 0; i < nv; i++)
        origin[v[i].who] |= (uint8_t)v[i].stands;
    return nv;
}

int nsc_rc_follow_run(nsc_findings *f, nsc_rc_follow *w)
{
    if (w->oom) {
        snprintf(f->src->err, sizeof f->src->err, "out of memory");
        return NSC_DIAG_FAIL;
    }
    if (w->nc < 2 || !w->n)
        return NSC_DIAG_OK;
    nsc_rc_own_times(w);
    uint32_t *late_n = calloc(w->nwho_of + 1, sizeof *late_n), *own_n = calloc(w->nwho_of + 1, sizeof *own_n);
    uint32_t *votes = calloc(w->nwho + 1, sizeof *votes);
    uint8_t *origin = calloc(w->nwho + 1, 1);
    fw_late *v = malloc(NSC_DIAG_MAX_PROBLEMS * sizeof *v);
    uint64_t *scratch = malloc(2 * (w->n + 1) * sizeof *scratch);
    int rc = late_n && own_n && votes && origin && v && scratch && nsc_rc_judge_colls(w, late_n, own_n) == 0 && nsc_rc_pairs_judge(w) == 0
                 ? NSC_DIAG_OK
                 : NSC_DIAG_FAIL;
    size_t nv = rc == NSC_DIAG_OK ? standing(f, w, v, late_n, own_n, origin) : 0;
    int added = rc == NSC_DIAG_OK ? nsc_rc_hidden_beats(f, w, origin) : 0;
    if (added < 0)
        rc = NSC_DIAG_FAIL;
    else if (added)
        nv = standing(f, w, v, late_n, own_n, origin);
    for (size_t i = 0; i < nv; i++)
        if (!v[i].stands && (v[i].origin = vote_origin(w, &v[i], origin, votes)) < 0)
            v[i].p->kind[0] = 0;  /* inherited from no late rank: not a cause */
    for (size_t i = 0; i < nv; i++)
        if (v[i].stands && origin[v[i].who] == 1) {
            merge_origin(f, w, v, nv, v[i].who, scratch);
            origin[v[i].who] = 2;  /* its verdict is made */
        }
    nsc_diag_compact(f);  /* drop the problems folded into a verdict */
    if (rc != NSC_DIAG_OK)
        snprintf(f->src->err, sizeof f->src->err, "out of memory");
    free(late_n);
    free(own_n);
    free(votes);
    free(origin);
    free(v);
    free(scratch);
    return rc;
}
