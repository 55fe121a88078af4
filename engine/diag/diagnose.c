/* diagnose.c: the problems of a job (diag.h): what someone debugging a stuck
 * or slow job needs first: the cause and the place.
 *
 * Reads the communicators (comms), per communicator the collectives matched
 * across ranks (collectives), and the live state (status), and looks for, most
 * severe first: collectives whose count, datatype, root or function differ
 * across ranks (mismatch); processes dead or silent while their ranks are
 * behind the others (dead); collectives some ranks never arrived at
 * (missing, with what the live state knows of each one's process; not one
 * that needs every rank and ended: its absent ranks' records are still on
 * their way); ranks behind the others for longer than the collector's lag
 * threshold (lagging; not one below a collective that needs every rank and
 * ended on a rank, in the store or by the live state: it went past, its
 * records are on their way too);
 * collectives in flight that long (hung); ranks that
 * never joined (never_joined); collectives all ranks entered that never ended
 * (in_flight: a communicator's first, the later ones counted as queued
 * behind it); Send/Recv operations without their other side
 * (p2p_unmatched, below never_joined); events the plugins dropped (dropped). rootcause.c adds, per
 * communicator, where a stuck collective stopped (stall), slow links and NICs,
 * and late ranks by cause (host_late, gpu_late), then rcfollow.c follows
 * the late ranks across the communicators that share processes (one
 * verdict per origin, the ranks that only inherit its delay its affected).
 * Problems are ordered by
 * severity, then communicator id, seq and rank, so the same store gives the
 * same report. Its document has a one-line verdict naming the first
 * problem's cause and place, then the problems with their evidence.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dint.h"
#include "figures.h"
#include "qs.h"
#include "statusdoc.h"

typedef nsc_problem problem;
typedef nsc_findings findings;

#define add(f, sev, ...) ((void)nsc_diag_add((f), (sev), __VA_ARGS__))

/* o's member key when it is an ISO-8601 time as the queries write them
 * (docs/api.md), else NULL: never copied into the JSON otherwise. */
static const char *utc_of(const nsc_json *o, const char *key)
{
    const char *utc = nsc_json_str(nsc_json_get(o, key));
    return utc && strlen(utc) < NSC_UTC_MAX && strspn(utc, "0123456789-T:.Z") == strlen(utc) ? utc : NULL;
}

/* p (if added) began when the collective or operation o began. */
static void began_at(problem *p, const nsc_json *o)
{
    const char *utc = utc_of(o, "start_utc");
    if (p && utc)
        snprintf(p->began, sizeof p->began, "%s", utc);
}

/* p (if added) began for_ns before now: the live state's lag and hangs. */
static void began_ago(problem *p, uint64_t for_ns)
{
    struct timespec now;
    if (!p || clock_gettime(CLOCK_REALTIME, &now))
        return;
    nsc_utc_iso((int64_t)now.tv_sec * 1000000000 + now.tv_nsec - (int64_t)for_ns, p->began, sizeof p->began);
}

#define MISSING_NAMED 4  /* ranks a missing collective names; the rest counted */

/* The ranks missing from a collective, each with what the live state knows
 * of its process: alive (it has not arrived yet), or ended or dead (it never
 * arrived), never a guess between them. */
static void missing_text(const findings *f, const nsc_json *missing, char *buf, size_t cap)
{
    size_t n = 0, k = 0;
    buf[0] = 0;
    for (const nsc_json *r = nsc_json_first(missing); r; r = nsc_json_next(missing, r), k++) {
        int64_t rank = -1;
        nsc_json_i64(r, &rank);
        const char *life = f->status ? nsc_status_rank_process(f->status, f->job, f->comm, rank) : "unknown";
        int w = k < MISSING_NAMED ? snprintf(buf + n, cap - n, "%srank %" PRId64 " %s (process %s)", k ? "; " : "",
                                             rank, strcmp(life, "alive") == 0 ? "has not arrived" : "never arrived",
                                             life)
                                  : 0;
        n += w > 0 && (size_t)w < cap - n ? (size_t)w : 0;
    }
    if (k > MISSING_NAMED)
        snprintf(buf + n, cap - n, "; %zu more ranks", k - MISSING_NAMED);
}

/* Whether a collective that needs every rank's data ended on a rank: then
 * every rank took part, and the ranks missing from it are records still on
 * their way (another collector's share not yet stored, an agent's backlog),
 * not ranks that never came. */
static int ended_with_all(const nsc_json *v, const char *func)
{
    const nsc_json *end = nsc_json_get(v, "end_ns");
    return end && end->kind != NSC_JSON_NULL && nsc_fig_needs_all(func);
}

/* Note that every rank of comm took part in its collective func seq: one
 * that needs every rank and ended on a rank. A pair past
 * NSC_DIAG_PASSED_MAX is not noted: its lagging ranks stay problems. */
static void note_passed(findings *f, const char *comm, const char *func, uint64_t seq)
{
    size_t i = 0;
    while (i < f->npassed && !(strcmp(f->passed[i].comm, comm) == 0 && strcmp(f->passed[i].func, func) == 0))
        i++;
    if (i == f->npassed) {
        if (i == NSC_DIAG_PASSED_MAX || strlen(func) >= sizeof f->passed[i].func)
            return;
        f->passed[f->npassed++] = (struct nsc_diag_passed){.comm = comm, .seq = seq};
        snprintf(f->passed[i].func, sizeof f->passed[i].func, "%s", func);
    }
    if (seq > f->passed[i].seq)
        f->passed[i].seq = seq;
}

/* Whether every rank of comm went past seq of func, by the store or the
 * live state: a rank the live state has lagging there took part in a later
 * one, its records on their way (another collector's share, an agent's
 * backlog), so it does not lag. */
static int went_past(const findings *f, const char *comm, const char *func, uint64_t seq)
{
    for (size_t i = 0; func && i < f->npassed; i++)
        if (strcmp(f->passed[i].comm, comm) == 0 && strcmp(f->passed[i].func, func) == 0)
            return f->passed[i].seq > seq;
    return 0;
}

/* The live state's word for went_past: a rank of the communicator c that
 * ended its latest collective of a function that needs every rank. */
static void note_live_passed(findings *f, const char *comm, const nsc_json *c)
{
    const nsc_json *ranks = nsc_json_get(c, "ranks");
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        const nsc_json *colls = nsc_json_get(r, "collectives");
        for (const nsc_json *x = nsc_json_first(colls); x; x = nsc_json_next(colls, x)) {
            const char *func = nsc_json_str(nsc_json_get(x, "func"));
            const nsc_json *open = nsc_json_get(x, "in_flight");
            if (func && open && open->kind == NSC_JSON_FALSE && nsc_fig_needs_all(func))
                note_passed(f, comm, func, nsc_diag_num(x, "seq"));
        }
    }
}

/* The run of one function ended: the read settles no further than it. */
static void settle_end(findings *f)
{
    if (f->settle_func[0] && f->settle_next < f->settled)
        f->settled = f->settle_next;
    f->settle_func[0] = 0;
}

/* With a carry: collective v settles when it ended on every rank and has
 * no problem of its own, so that no record to come changes what it says.
 * Each function's run of the read (in (func, seq) order) settles up to its
 * first collective that does not, or its first seq missing (not stored
 * yet); f->settled becomes the least over the functions. */
static void settle(findings *f, const char *func, uint64_t seq, const nsc_json *v)
{
    const nsc_json *end = nsc_json_get(v, "end_ns"), *missing = nsc_json_get(v, "missing_ranks");
    int clean = end && end->kind != NSC_JSON_NULL && !nsc_json_str(nsc_json_get(v, "mismatch")) &&
                (!missing || missing->count == 0) && nsc_diag_num(v, "ranks_seen") >= nsc_diag_num(v, "nranks");
    func = func && func[0] ? func : "?";
    if (strcmp(func, f->settle_func) != 0) {
        settle_end(f);
        snprintf(f->settle_func, sizeof f->settle_func, "%s", func);
        f->settle_next = seq;
        f->settle_stop = 0;
    }
    if (!f->settle_stop && clean && seq == f->settle_next)
        f->settle_next = seq + 1;
    else if (!clean && seq < f->settle_next)  /* one of a seq already counted settled */
        f->settle_next = seq, f->settle_stop = 1;
    else
        f->settle_stop = 1;
}

static int on_collective(void *arg, const nsc_json *v, const char *line, size_t len)
{
    (void)line, (void)len;
    findings *f = arg;
    const char *kind = nsc_json_str(nsc_json_get(v, "kind"));
    if (kind && strcmp(kind, "header") == 0)
        f->has_wall = nsc_json_i64(nsc_json_get(v, "wall_offset_ns"), &f->wall_ns) == 0;
    uint64_t seq = 0;
    nsc_json_u64(nsc_json_get(v, "seq"), &seq);
    if (!kind || strcmp(kind, "collective") != 0 || seq < f->first_seq)
        return 0;
    f->collectives++;
    const char *func = nsc_json_str(nsc_json_get(v, "func"));
    if (f->mark)
        settle(f, func, seq, v);
    const char *mismatch = nsc_json_str(nsc_json_get(v, "mismatch"));
    if (func && ended_with_all(v, func))
        note_passed(f, f->comm, func, seq);
    if (f->late)
        nsc_rc_late_add(f->late, v);
    const nsc_json *missing = nsc_json_get(v, "missing_ranks");
    char ranks[sizeof f->p[0].text];
    problem *p = NULL;
    if (mismatch)
        p = nsc_diag_add(f, NSC_SEV_MISMATCH, "mismatch", f->comm, nsc_diag_num(v, "mismatch_seq"),
                         nsc_diag_num_or(v, "mismatch_rank", -1),
                         "mismatch: rank %" PRId64 " disagrees with the others at seq %" PRIu64 ": %s",
                         nsc_diag_num_or(v, "mismatch_rank", -1), nsc_diag_num(v, "mismatch_seq"), mismatch);
    else if (missing && missing->kind == NSC_JSON_ARRAY && missing->count > 0 && !ended_with_all(v, func)) {
        missing_text(f, missing, ranks, sizeof ranks);
        int64_t first = -1;
        nsc_json_i64(nsc_json_first(missing), &first);
        p = nsc_diag_add(f, NSC_SEV_MISSING, "missing", f->comm, seq, first, "%s seq %" PRIu64 ": %.250s",
                         func ? func : "?", seq, ranks);
    } else if (nsc_json_get(v, "end_ns") && nsc_json_get(v, "end_ns")->kind == NSC_JSON_NULL) {
        /* NCCL runs a communicator's collectives in order: the later ones
         * wait behind its first in flight, one problem (and the real causes
         * elsewhere in the job still fit in the findings) */
        if (f->in_flight)
            f->queued++;
        else
            p = f->in_flight = nsc_diag_add(f, NSC_SEV_IN_FLIGHT, "in_flight", f->comm, seq, -1,
                                            "%s seq %" PRIu64 ": all ranks arrived, never completed",
                                            func ? func : "?", seq);
    }
    began_at(p, v);  /* a mismatch began with its collective too */
    return 0;
}

/* q and, with f->mark, the start it names (t0_ns) and how far behind the
 * job's latest event the next one stays (settle_lag_ns). */
static int p2p_query(findings *f, const char *q, char *out, size_t cap)
{
    char t0[24], lag[24];
    const struct nsc_rc_mark *m = f->mark;
    snprintf(out, cap, "%s", q);
    snprintf(t0, sizeof t0, "%" PRIu64, m ? m->p2p_ns : 0);
    snprintf(lag, sizeof lag, "%" PRIu64, f->p2p_lag_ns);
    if ((m && m->p2p_ns && nsc_qs_add(out, cap, "t0_ns", t0) != 0) ||
        (m && nsc_qs_add(out, cap, "settle_lag_ns", lag) != 0)) {
        snprintf(f->src->err, sizeof f->src->err, "query string too long");
        return NSC_DIAG_FAIL;
    }
    return NSC_DIAG_OK;
}

/* Send/Recv operations left without their other side (the p2p endpoint's
 * unmatched list, by direction and side, in order): a Recv whose Send never
 * came is a rank waiting on a peer that never sent, a hang in point-to-point
 * traffic. One problem per rank, peer and side, at its first operation. With
 * f->mark, read from where the last pass left every pair matched: an
 * operation left over stays after that point, so it is still found. */
static int check_p2p(findings *f, const char *comm, const char *qs)
{
    nsc_doc d;
    char q[2048];
    int rc = p2p_query(f, qs, q, sizeof q);
    if (rc == NSC_DIAG_OK)
        rc = nsc_diag_fetch_doc(f->src, "p2p", q, &d);
    if (rc != NSC_DIAG_OK)
        return rc;
    if (f->mark)
        f->mark->p2p_ns = nsc_diag_num(nsc_json_root(&d.doc), "settled_ns");
    const nsc_json *un = nsc_json_get(nsc_json_root(&d.doc), "unmatched");
    for (const nsc_json *u = nsc_json_first(un), *next; u; u = next) {
        const char *func = nsc_json_str(nsc_json_get(u, "func"));
        int recv = func && strcmp(func, "Recv") == 0;
        int64_t rank = nsc_diag_num_or(u, "rank", -1), peer = nsc_diag_num_or(u, "peer", -1);
        uint64_t nth = nsc_diag_num(u, "nth"), more = 0;
        for (next = nsc_json_next(un, u); next; next = nsc_json_next(un, next), more++) {
            const char *nf = nsc_json_str(nsc_json_get(next, "func"));
            if (!nf || !func || strcmp(nf, func) != 0 || nsc_diag_num_or(next, "rank", -1) != rank ||
                nsc_diag_num_or(next, "peer", -1) != peer)
                break;
        }
        problem *p = nsc_diag_add(f, NSC_SEV_P2P_UNMATCHED, "p2p_unmatched", comm, 0, rank,
                                  recv ? "rank %" PRId64 " waits in Recv #%" PRIu64 " from rank %" PRId64
                                         ": the matching Send never came (hung in p2p; %" PRIu64 " later Recvs too)"
                                       : "rank %" PRId64 " Send #%" PRIu64 " to rank %" PRId64
                                         " was never received (hung in p2p; %" PRIu64 " later Sends too)",
                                  rank, nth, peer, more);
        if (!p)
            continue;
        p->peer = peer;
        began_at(p, u);
        const char *utc = utc_of(u, "start_utc");  /* as p2p gave it (docs/api.md) */
        snprintf(p->figures, sizeof p->figures,
                 "\"func\":\"%s\",\"nth\":%" PRIu64 ",\"unmatched\":%" PRIu64 ",\"bytes\":%" PRIu64
                 ",\"start_ns\":%" PRIu64 ",\"start_utc\":%s%.40s%s",
                 recv ? "Recv" : "Send", nth, more + 1, nsc_diag_num(u, "bytes"), nsc_diag_num(u, "start_ns"),
                 utc ? "\"" : "", utc ? utc : "null", utc ? "\"" : "");
    }
    nsc_doc_free(&d);
    return NSC_DIAG_OK;
}

/* The lowest rank of [0, nranks) not in the array of ranks seen. */
static int64_t first_absent(const nsc_json *seen, int64_t nranks)
{
    for (int64_t k = 0; k < nranks; k++) {
        int found = 0;
        for (const nsc_json *r = nsc_json_first(seen); r && !found; r = nsc_json_next(seen, r)) {
            int64_t v;
            found = nsc_json_i64(r, &v) == 0 && v == k;
        }
        if (!found)
            return k;
    }
    return -1;
}

/* f->seqs for communicator id: its last f->window seqs by the live state
 * (p2p has no seqs: it reads from f->mark, check_p2p). Returns the first
 * seq of the window, 0 for all. */
static uint64_t set_window(findings *f, const char *id)
{
    uint64_t top = f->window && f->status ? nsc_status_comm_max_seq(f->status, f->job, id) : 0;
    f->seqs[0] = 0;
    if (top < f->window || !f->window)
        return 0;
    snprintf(f->seqs, sizeof f->seqs, "%" PRIu64 "-%" PRIu64, top + 1 - f->window, UINT64_MAX);
    return top + 1 - f->window;
}

/* A communicator's first collective in flight names how many of its later
 * ones wait behind it (figures.queued). */
static void queued_behind(problem *p, uint64_t queued)
{
    size_t n = strlen(p->text);
    snprintf(p->text + n, sizeof p->text - n, "; %" PRIu64 " later collective(s) of the comm queued behind it",
             queued);
    snprintf(p->figures, sizeof p->figures, "\"queued\":%" PRIu64, queued);
}

static int check_comm(findings *f, nsc_rc_follow *w, const nsc_json *comm, const char *qs)
{
    const char *id = nsc_json_str(nsc_json_get(comm, "comm"));
    int64_t nranks = 0, seen = 0;
    if (!id)
        return NSC_DIAG_OK;
    if (nsc_json_i64(nsc_json_get(comm, "nranks"), &nranks) == 0 &&
        nsc_json_i64(nsc_json_get(comm, "ranks_seen"), &seen) == 0 && seen < nranks) {
        int64_t first = first_absent(nsc_json_get(comm, "ranks"), nranks);
        add(f, NSC_SEV_NEVER_JOINED, "never_joined", id, 0, first,
            "%" PRId64 " of %" PRId64 " ranks never joined, the first rank %" PRId64, nranks - seen, nranks, first);
    }
    char q[2048], cq[2048];
    snprintf(q, sizeof q, "%s", qs);
    uint64_t lo = set_window(f, id);
    if (f->carry && !(f->mark = nsc_diag_carry_mark(f->carry, id))) {
        snprintf(f->src->err, sizeof f->src->err, "out of memory");
        return NSC_DIAG_FAIL;
    }
    lo = nsc_diag_from_settled(f, id, lo);
    /* with a carry the first collective read is split as in the whole job */
    f->first_seq = f->mark ? lo : 0;
    snprintf(f->rc_seqs, sizeof f->rc_seqs, "%s", f->seqs);
    if (f->mark && lo)
        snprintf(f->rc_seqs, sizeof f->rc_seqs, "%" PRIu64 "-%" PRIu64, lo, UINT64_MAX);
    if (nsc_qs_add(q, sizeof q, "comm", id) != 0 ||
        (f->first_seq ? nsc_diag_with_previous(cq, sizeof cq, q, lo, UINT64_MAX)
                      : nsc_diag_qs_seqs(cq, sizeof cq, q, f->seqs)) != 0) {
        snprintf(f->src->err, sizeof f->src->err, "query string too long");
        return NSC_DIAG_FAIL;
    }
    f->comm = id;
    f->late = nsc_rc_late_new(nranks);
    f->in_flight = NULL;
    f->queued = 0;
    f->settled = UINT64_MAX;
    f->settle_func[0] = 0;
    int rc = nsc_diag_carry_late(f, q, lo, nranks);
    if (rc == NSC_DIAG_OK)
        rc = nsc_diag_fetch_pages(f->src, "collectives", cq, NULL, on_collective, f);
    settle_end(f);
    if (rc == NSC_DIAG_OK && f->mark)
        f->mark->settled = f->settled == UINT64_MAX ? lo : f->settled;
    if (f->queued)
        queued_behind(f->in_flight, f->queued);
    if (rc == NSC_DIAG_OK)
        rc = check_p2p(f, id, q);
    if (rc == NSC_DIAG_OK && f->late)
        rc = nsc_rc_comm(f, f->late, id, qs);
    if (rc == NSC_DIAG_OK && w)
        rc = nsc_rc_follow_comm(f, w, id, nranks, qs);
    nsc_rc_late_free(f->late);
    f->late = NULL;
    f->mark = NULL;  /* the carry may move as the next communicator is added */
    f->first_seq = 0;
    return rc;
}

/* Severity, then position (communicator, seq, rank), then the order found. */
static int by_severity(const void *a, const void *b)
{
    const problem *x = a, *y = b;
    int c = y->severity - x->severity;
    if (!c)
        c = strcmp(x->comm, y->comm);
    if (!c)
        c = (x->seq > y->seq) - (x->seq < y->seq);
    if (!c)
        c = (x->rank > y->rank) - (x->rank < y->rank);
    return c ? c : (x->order > y->order) - (x->order < y->order);
}


static int comm_wanted(const char *only, const nsc_json *comm)
{
    const char *id = nsc_json_str(nsc_json_get(comm, "comm"));
    const char *name = nsc_json_str(nsc_json_get(comm, "name"));
    return !only || (id && strcmp(only, id) == 0) || (name && strcmp(only, name) == 0);
}

/* Dead or silent processes whose ranks stopped behind the others. */
static void check_deaths(findings *f, const nsc_json *status, const nsc_json *comm)
{
    const char *id = nsc_json_str(nsc_json_get(comm, "comm"));
    const nsc_json *ranks = nsc_json_get(comm, "ranks");
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        const char *host = nsc_json_str(nsc_json_get(r, "host"));
        const nsc_json *p = host ? nsc_status_process(status, host, nsc_diag_num(r, "pid")) : NULL;
        const char *state = p ? nsc_json_str(nsc_json_get(p, "state")) : NULL;
        const char *func, *reason = p ? nsc_json_str(nsc_json_get(p, "reason")) : NULL;
        uint64_t seq = 0, max;
        if (!state || strcmp(state, "alive") == 0 || strcmp(state, "finished") == 0)
            continue;
        if (nsc_status_rank_behind(comm, r, &func, &seq, &max))
            add(f, NSC_SEV_DEAD, "dead", id ? id : "?", seq, (int64_t)nsc_diag_num(r, "rank"),
                "rank %" PRIu64 " (pid %" PRIu64 " on %s) is %s%s%s at %s seq %" PRIu64 ", the others reached %" PRIu64,
                nsc_diag_num(r, "rank"), nsc_diag_num(r, "pid"), host, state, reason ? ": " : "", reason ? reason : "",
                func, seq, max);
        else if (nsc_status_rank_unstarted(comm, r, &func, &max))
            add(f, NSC_SEV_DEAD, "dead", id ? id : "?", 0, (int64_t)nsc_diag_num(r, "rank"),
                "rank %" PRIu64 " (pid %" PRIu64 " on %s) is %s%s%s before its first collective, the others "
                "reached %s seq %" PRIu64,
                nsc_diag_num(r, "rank"), nsc_diag_num(r, "pid"), host, state, reason ? ": " : "", reason ? reason : "",
                func, max);
    }
}

/* What the live state knows: deaths, lag and hangs by time, drops. */
static void check_status(findings *f, const nsc_json *status, const char *job)
{
    const nsc_json *j = nsc_status_job(status, job);
    if (!j)
        return;
    const nsc_json *comms = nsc_json_get(j, "comms");
    for (const nsc_json *c = nsc_json_first(comms); c; c = nsc_json_next(comms, c)) {
        const char *id = nsc_json_str(nsc_json_get(c, "comm"));
        if (!id || !comm_wanted(f->only, c))
            continue;
        check_deaths(f, status, c);
        note_live_passed(f, id, c);
        const nsc_json *lag = nsc_json_get(c, "lagging"), *hangs = nsc_json_get(c, "hangs");
        for (const nsc_json *l = nsc_json_first(lag); l; l = nsc_json_next(lag, l))
            if (!went_past(f, id, nsc_json_str(nsc_json_get(l, "func")), nsc_diag_num(l, "seq")))
                began_ago(nsc_diag_add(f, NSC_SEV_LAGGING, "lagging", id, nsc_diag_num(l, "seq"),
                                       (int64_t)nsc_diag_num(l, "rank"),
                                       "rank %" PRIu64 " is at %s seq %" PRIu64 ", the others reached %" PRIu64
                                       " (for %.1f s)",
                                       nsc_diag_num(l, "rank"), nsc_json_str(nsc_json_get(l, "func")),
                                       nsc_diag_num(l, "seq"), nsc_diag_num(l, "max_seq"),
                                       (double)nsc_diag_num(l, "for_ns") / 1e9),
                          nsc_diag_num(l, "for_ns"));
        for (const nsc_json *h = nsc_json_first(hangs); h; h = nsc_json_next(hangs, h))
            began_ago(nsc_diag_add(f, NSC_SEV_HUNG, "hung", id, nsc_diag_num(h, "seq"),
                                   (int64_t)nsc_diag_num(h, "rank"), "rank %" PRIu64 ": %s seq %" PRIu64
                                   " in flight for %.1f s", nsc_diag_num(h, "rank"),
                                   nsc_json_str(nsc_json_get(h, "func")), nsc_diag_num(h, "seq"),
                                   (double)nsc_diag_num(h, "for_ns") / 1e9),
                      nsc_diag_num(h, "for_ns"));
    }
    const nsc_json *procs = nsc_json_get(status, "processes");
    for (const nsc_json *p = nsc_json_first(procs); p; p = nsc_json_next(procs, p)) {
        const char *pj = nsc_json_str(nsc_json_get(p, "job"));
        const char *host = nsc_json_str(nsc_json_get(p, "host"));
        if (!pj || strcmp(pj, job) != 0 || !(nsc_diag_num(p, "events_dropped") || nsc_diag_num(p, "states_dropped")))
            continue;
        problem *d = nsc_diag_add(f, NSC_SEV_DROPPED, "dropped", "-", 0, -1,
                                  "pid %" PRIu64 " on %s dropped %" PRIu64 " events and %" PRIu64 " states",
                                  nsc_diag_num(p, "pid"), host ? host : "?", nsc_diag_num(p, "events_dropped"),
                                  nsc_diag_num(p, "states_dropped"));
        if (d && host)
            snprintf(d->hosts[0], sizeof d->hosts[0], "%s", host);
    }
}

/* Problems with a rank but no host yet (mismatch, missing, dead, lagging,
 * hung, never_joined seen later) get their rank's host from the live state's
 * communicator ranks. */
static void fill_hosts(findings *f, const nsc_json *status, const char *job)
{
    const nsc_json *comms = nsc_json_get(nsc_status_job(status, job), "comms");
    for (const nsc_json *c = nsc_json_first(comms); c; c = nsc_json_next(comms, c)) {
        const char *id = nsc_json_str(nsc_json_get(c, "comm"));
        const nsc_json *ranks = nsc_json_get(c, "ranks");
        for (size_t i = 0; id && i < f->n; i++) {
            problem *p = &f->p[i];
            if (p->rank < 0 || p->hosts[0][0] || strcmp(p->comm, id) != 0)
                continue;
            for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
                const char *host = nsc_json_str(nsc_json_get(r, "host"));
                if (host && nsc_diag_num(r, "rank") == (uint64_t)p->rank)
                    snprintf(p->hosts[0], sizeof p->hosts[0], "%s", host);
            }
        }
    }
}

static void write_place(const problem *p, FILE *out)
{
    static const char *const keys[4] = {"rank", "peer", "channel", "step"};
    const int64_t v[4] = {p->rank, p->peer, p->channel, p->step};
    for (int k = 0; k < 4; k++) {
        if (v[k] >= 0)
            fprintf(out, ",\"%s\":%" PRId64, keys[k], v[k]);
        else
            fprintf(out, ",\"%s\":null", keys[k]);
    }
    fprintf(out, ",\"seq\":%" PRIu64 ",\"hosts\":[", p->seq);
    for (int h = 0; h < 2 && p->hosts[h][0]; h++) {
        fputs(h ? "," : "", out);
        nsc_json_write_str(out, p->hosts[h]);
    }
    fprintf(out, "],\"figures\":{%s},\"began\":", p->figures);
    if (p->began[0])
        fprintf(out, "\"%s\"", p->began);
    else
        fputs("null", out);
}

void nsc_diag_verdict(const nsc_findings *f, char *buf, size_t cap)
{
    if (f->n == 0)
        snprintf(buf, cap, "OK: no problem found in %" PRIu64 " collectives", f->collectives);
    else
        snprintf(buf, cap, "PROBLEM: comm %s: %s", f->p[0].comm, f->p[0].text);
}

void nsc_diag_write_problem(const nsc_problem *p, FILE *out)
{
    fprintf(out, "{\"kind\":\"%s\",\"comm\":", p->kind);
    nsc_json_write_str(out, p->comm);
    write_place(p, out);
    fputs(",\"evidence\":", out);
    nsc_json_write_str(out, p->text);
    fputs("}", out);
}

void nsc_diag_write_json(const nsc_findings *f, FILE *out)
{
    char verdict[400];
    nsc_diag_verdict(f, verdict, sizeof verdict);
    fputs("{\"job\":", out);
    nsc_json_write_str(out, f->job);
    fputs(",\"verdict\":", out);
    nsc_json_write_str(out, verdict);
    fprintf(out, ",\"collectives_checked\":%" PRIu64 ",\"problems\":[", f->collectives);
    for (size_t i = 0; i < f->n; i++) {
        fputs(i ? "," : "", out);
        nsc_diag_write_problem(&f->p[i], out);
    }
    fprintf(out, "],\"problems_not_shown\":%zu}\n", f->dropped);
}

int nsc_diag_find(const char *job, const nsc_json *status, nsc_findings *f)
{
    char job_qs[512] = "";
    if (job && nsc_qs_add(job_qs, sizeof job_qs, "job", job) != 0) {
        snprintf(f->src->err, sizeof f->src->err, "job name too long");
        return NSC_DIAG_USAGE;
    }
    /* One communicator: the source finds its job (any job when none is named). */
    char comms_qs[1024];
    snprintf(comms_qs, sizeof comms_qs, "%s", job_qs);
    if (f->only && nsc_qs_add(comms_qs, sizeof comms_qs, "comm", f->only) != 0) {
        snprintf(f->src->err, sizeof f->src->err, "communicator too long");
        return NSC_DIAG_USAGE;
    }
    nsc_doc d;
    f->npassed = 0;  /* its communicators point into d */
    int rc = nsc_diag_fetch_doc(f->src, "comms", comms_qs, &d);
    const char *name = job || rc != NSC_DIAG_OK ? job : nsc_json_str(nsc_json_get(nsc_json_root(&d.doc), "job"));
    snprintf(f->job, sizeof f->job, "%s", name ? name : "");
    if (!job && name && nsc_qs_add(job_qs, sizeof job_qs, "job", name) != 0) {
        snprintf(f->src->err, sizeof f->src->err, "job name too long");
        rc = NSC_DIAG_USAGE;
    }
    /* The live state first: what a missing rank's process is says what it means. */
    nsc_doc st = {0};
    if (rc == NSC_DIAG_OK && !status && (rc = nsc_diag_fetch_doc(f->src, "status", "", &st)) == NSC_DIAG_OK)
        status = nsc_json_root(&st.doc);
    f->status = status;
    const nsc_json *comms = rc == NSC_DIAG_OK ? nsc_json_get(nsc_json_root(&d.doc), "comms") : NULL;
    /* late ranks are followed across communicators when all are checked */
    nsc_rc_follow *w = f->only || !comms || comms->count < 2 ? NULL : nsc_rc_follow_new();
    for (const nsc_json *m = comms ? nsc_json_first(comms) : NULL; m && rc == NSC_DIAG_OK;
         m = nsc_json_next(comms, m))
        rc = check_comm(f, w, m, job_qs);
    if (rc == NSC_DIAG_OK && w)
        rc = nsc_rc_follow_run(f, w);
    nsc_rc_follow_free(w);
    if (rc == NSC_DIAG_OK)
        nsc_rc_nic_narrow(f);
    if (rc == NSC_DIAG_OK && name) {
        check_status(f, status, name);
        fill_hosts(f, status, name);
    }
    f->status = NULL;
    nsc_doc_free(&st);
    nsc_doc_free(&d);
    if (rc == NSC_DIAG_OK)
        qsort(f->p, f->n, sizeof f->p[0], by_severity);
    return rc;
}
