/* rclate.c: late ranks, the first of root cause's analyses (rcint.h): who
 * arrived last at each collective, how late, and whether its host, its GPU
 * or its previous collective made it late; also keeps the first collective
 * that never ended, for rcstall.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figures.h"
#include "order.h"
#include "rcint.h"

nsc_rc_late *nsc_rc_late_new(int64_t nranks)
{
    if (nranks <= 0 || nranks > (1 << 20))
        return NULL;
    nsc_rc_late *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->nranks = nranks;
    l->r = calloc((size_t)nranks, sizeof *l->r);
    l->scratch = calloc(2 * (size_t)nranks, sizeof *l->scratch);
    if (!l->r || !l->scratch) {
        nsc_rc_late_free(l);
        return NULL;
    }
    return l;
}

void nsc_rc_late_free(nsc_rc_late *l)
{
    if (!l)
        return;
    free(l->r);
    free(l->scratch);
    free(l);
}

int nsc_rc_late_copy(nsc_rc_late *dst, const nsc_rc_late *src)
{
    if (dst->nranks != src->nranks)
        return -1;
    rc_rank_late *r = dst->r;
    uint64_t *scratch = dst->scratch;
    *dst = *src;
    dst->r = r, dst->scratch = scratch;
    memcpy(dst->r, src->r, (size_t)src->nranks * sizeof *dst->r);
    return 0;
}

static void keep_stuck(nsc_rc_late *l, const nsc_json *coll)
{
    l->stuck = 1;
    l->stuck_seq = nsc_diag_num(coll, "seq");
    l->stuck_start = l->stuck_from = nsc_diag_num(coll, "start_ns");
    for (uint64_t i = 0; i < l->nrecent && i < RC_STUCK_BEFORE; i++)
        l->stuck_from = l->recent[i] < l->stuck_from ? l->recent[i] : l->stuck_from;
    l->stuck_nch = (uint32_t)nsc_diag_num(coll, "nchannels");
    const char *func = nsc_json_str(nsc_json_get(coll, "func"));
    snprintf(l->stuck_func, sizeof l->stuck_func, "%s", func ? func : "?");
}

/* Count a collective a rank was affected or behind at (its place:
 * x->seen) on each beat of each of its first affected ones. */
static void count_beats(rc_rank_late *x)
{
    size_t anchors = x->affected < RC_LATE_ONSETS ? (size_t)x->affected : RC_LATE_ONSETS;
    for (uint64_t n = 2; n < RC_LATE_MAX_EVERY; n++)
        for (size_t i = 0; i < anchors; i++)
            x->beat[i][n] += (x->seen - x->first_seen[i]) % n == 0;
}

void nsc_rc_late_mark(rc_rank_late *x, uint64_t seq, uint64_t start_ns)
{
    if (x->affected < RC_LATE_ONSETS) {
        x->first_seq[x->affected] = seq;
        x->first_ns[x->affected] = start_ns;
        x->first_seen[x->affected] = x->seen;
        x->first_behind[x->affected] = x->behind;
    }
    if (x->affected) {
        uint64_t gap = x->seen - x->last_affected;
        x->gaps[gap < RC_LATE_MAX_GAP ? gap : RC_LATE_MAX_GAP]++;
    }
    x->last_affected = x->seen;
    x->affected++;
    count_beats(x);
}

/* Charge the last rank the collective's lateness as the collectives
 * endpoint splits it (docs/api-figures.md, "Figures"), and the others' waits. */
static void charge_last(nsc_rc_late *l, const nsc_json *coll)
{
    uint64_t rank = nsc_diag_num(coll, "last_rank"), late = nsc_diag_num(coll, "late_ns");
    if (!late || rank >= (uint64_t)l->nranks)
        return;
    const nsc_json *ranks = nsc_json_get(coll, "ranks"), *own = nsc_json_get(coll, "late_of_its_own");
    uint64_t cost = 0, host = nsc_diag_num(coll, "late_host_ns"), gpu = nsc_diag_num(coll, "late_gpu_ns");
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r))
        cost += nsc_diag_num(r, "wait_ns");
    rc_rank_late *x = &l->r[rank];
    x->last++;
    x->cost_ns += cost;
    int is_own = own && own->kind == NSC_JSON_TRUE;
    x->own_late += is_own;
    /* at its first collective a rank has no previous gap to split its
     * lateness by: a late one counts as its own there */
    if (is_own || (!x->seen && late >= NSC_FIG_LATE_MIN_NS)) {
        nsc_rc_late_mark(x, nsc_diag_num(coll, "seq"), nsc_diag_num(coll, "start_ns"));
        x->own_cost_ns += cost;
        l->own_all++;
    }
    /* its host's and GPU's shares count where it was late of its own: at
     * the others a share of its host's is not why it was late (a training
     * job's late host, last at its step's later collectives behind the other
     * stage's slow GPU, was charged 1.7 times its delay) */
    if (!is_own)
        gpu = host = 0;
    x->gpu_ns += gpu;
    x->host_ns += host;
    x->prev_ns += late - gpu - host;
}

/* Count the ranks that arrived NSC_FIG_LATE_MIN_NS or more after the
 * others' usual arrival (the lower median) but not last: another rank, a
 * loaded machine's pause, was later still. Such a collective does not part
 * a late rank's run (onset_of). */
static void count_behind(nsc_rc_late *l, const nsc_json *coll)
{
    const nsc_json *ranks = nsc_json_get(coll, "ranks");
    uint64_t *at = l->scratch, last = nsc_diag_num(coll, "last_rank");
    size_t n = 0;
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        int64_t t = nsc_diag_num_or(r, "arrival_ns", -1);
        if (t < 0 || n == (size_t)l->nranks)
            return; /* an arrival unknown: no usual one to be behind */
        at[n++] = (uint64_t)t;
    }
    if (n < 3)
        return;
    qsort(at, n, sizeof *at, nsc_cmp_u64);
    uint64_t usual = at[(n - 1) / 2];
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        uint64_t rank = nsc_diag_num(r, "rank");
        if (rank < (uint64_t)l->nranks && rank != last && nsc_diag_num(r, "arrival_ns") >= usual + NSC_FIG_LATE_MIN_NS) {
            l->r[rank].behind++;
            count_beats(&l->r[rank]);
        }
    }
}

/* The start of a collective read before the stuck one. */
static void keep_recent(nsc_rc_late *l, const nsc_json *coll)
{
    const nsc_json *start = nsc_json_get(coll, "start_ns");
    if (!l->stuck && start && start->kind != NSC_JSON_NULL)
        l->recent[l->nrecent++ % RC_STUCK_BEFORE] = nsc_diag_num(coll, "start_ns");
}

void nsc_rc_late_add(nsc_rc_late *l, const nsc_json *coll)
{
    const nsc_json *ranks = nsc_json_get(coll, "ranks"), *missing = nsc_json_get(coll, "missing_ranks");
    const nsc_json *end = nsc_json_get(coll, "end_ns"), *mm = nsc_json_get(coll, "mismatch");
    keep_recent(l, coll);
    /* a rank the store never saw is in no missing_ranks: ranks_seen tells */
    if (!ranks || (missing && missing->count) || (mm && mm->kind != NSC_JSON_NULL) ||
        nsc_diag_num(coll, "ranks_seen") < nsc_diag_num(coll, "nranks"))
        return;
    if (!end || end->kind == NSC_JSON_NULL) {
        if (!l->stuck)
            keep_stuck(l, coll);
        return;
    }
    charge_last(l, coll);
    count_behind(l, coll);
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        uint64_t rank = nsc_diag_num(r, "rank");
        if (rank < (uint64_t)l->nranks)
            l->r[rank].seen++;
    }
}

/* ---- late ranks ------------------------------------------------------------ */

/* How often a late rank is late since its onset: the upper median of the
 * gaps between its affected collectives (1: every collective, N: 1 in N),
 * so that one a loaded machine hid does not halve it, nor a pause between
 * two of them, which splits a gap in two, make it more often; 0 with one. */
uint64_t nsc_rc_late_every(const rc_rank_late *x)
{
    uint64_t n = x->affected > 1 ? x->affected - 1 : 0, below = 0;
    for (uint64_t g = 1; g <= RC_LATE_MAX_GAP && n; g++) {
        below += x->gaps[g];
        if (2 * below > n)
            return g;
    }
    return n ? RC_LATE_MAX_GAP : 0;
}

/* The gap between a late rank's i-th and next affected collectives, less
 * those between it was behind at. */
static uint64_t onset_gap(const rc_rank_late *x, size_t i)
{
    return x->first_seen[i + 1] - x->first_seen[i] - (x->first_behind[i + 1] - x->first_behind[i]);
}

/* Whether a late rank's i-th affected collective (with those before it)
 * stands alone: the next comes more than twice the usual gap and twice the
 * gap after it later (not for the collectives between where it was late
 * behind a rank later still). */
static int lone(const rc_rank_late *x, size_t i, uint64_t every)
{
    return onset_gap(x, i) > 2 * every && onset_gap(x, i) > 2 * onset_gap(x, i + 1);
}

/* Whether a late rank's i-th affected collective is out of step with its
 * j-th (off_beat: the next): the collectives between them are less than
 * half its usual gap, or off a whole number of them by more than a quarter
 * of one. An intermittent fault's own come whole periods apart, one a
 * loaded machine hid or not; a pause shortly before its first does not,
 * nor a job's start, where its processes come in one by one. */
static int off_apart(const rc_rank_late *x, size_t i, size_t j, uint64_t every)
{
    if (every < 2)
        return 0;
    uint64_t gap = x->first_seen[j] - x->first_seen[i];
    if (2 * gap < every)
        return 1;
    uint64_t off = gap % every;
    if (every - off < off)
        off = every - off;
    return 4 * off > every;
}

static int off_beat(const rc_rank_late *x, size_t i, uint64_t every)
{
    return off_apart(x, i, i + 1, every);
}

/* Which of its first affected collectives is a late rank's onset
 * (RC_LATE_ONSETS, rcint.h): one is passed over when it stands alone (a
 * loaded machine's pause, not a run that a loaded machine made look
 * denser), or when it is out of step with the next and that one in step
 * with the one after (off_beat: a pause before the fault's first; a pause
 * after it is out of step with both its neighbours); two are when the
 * second stands alone (two pauses close together before a fault from mid
 * job: a slow GPU from seq 6 was dated seq 0 under the sanitizers), or
 * when both are out of step and the next two in step (the job's start
 * before a host late at 1 step in 10: its first two collectives, then
 * seq 32, 192, ...). */
static size_t onset_of(const rc_rank_late *x, uint64_t every)
{
    size_t i = 0, kept = x->affected < RC_LATE_ONSETS ? (size_t)x->affected : RC_LATE_ONSETS;
    for (;;) {
        if (i + 2 < kept && (lone(x, i, every) || (off_beat(x, i, every) && !off_beat(x, i + 1, every))))
            i++;
        else if (i + 3 < kept && (lone(x, i + 1, every) || (off_beat(x, i, every) && off_beat(x, i + 1, every) &&
                                                            !off_beat(x, i + 2, every) && off_apart(x, i, i + 2, every))))
            i += 2;
        else
            return i;
    }
}

/* Whether a late rank kept to its beat since its onset: affected, or
 * behind a rank later still, at RC_LATE_HELD_NUM / RC_LATE_HELD_DEN or more
 * of the collectives it would be late at, one in `every` (rcint.h). */
static int held_beat(const rc_rank_late *x, size_t on, uint64_t every, uint64_t since)
{
    uint64_t hits = x->affected - on + x->behind - x->first_behind[on];
    return RC_LATE_HELD_DEN * hits * (every ? every : 1) >= RC_LATE_HELD_NUM * since;
}

/* Whether a late rank kept to a beat of `every` since its onset, and only
 * to it (RC_LATE_BEAT_NUM, RC_LATE_BEAT_OFF: rcint.h). */
static int kept_beat(const rc_rank_late *x, size_t on, uint64_t every, uint64_t since)
{
    uint64_t beats = every ? (since + every - 1) / every : 0;
    if (every < 2 || every >= RC_LATE_MAX_EVERY || beats < RC_LATE_BEAT_MIN)
        return 0;
    uint64_t hits = x->beat[on][every], all = x->affected - on + x->behind - x->first_behind[on];
    return RC_LATE_BEAT_DEN * hits >= RC_LATE_BEAT_NUM * beats && RC_LATE_BEAT_OFF * (all - hits) <= since - beats;
}

int nsc_rc_late_beat(const rc_rank_late *x, size_t *on, uint64_t *every)
{
    size_t anchors = x->affected < RC_LATE_ONSETS ? (size_t)x->affected : RC_LATE_ONSETS;
    for (size_t i = 0; i < anchors; i++)
        for (uint64_t n = 2; n < RC_LATE_MAX_EVERY; n++)
            if (kept_beat(x, i, n, x->seen - x->first_seen[i])) {
                *on = i, *every = n;
                return 1;
            }
    return 0;
}

/* Whether a late rank that kept a beat too long for kept_beat (1 in
 * RC_LATE_MAX_EVERY or fewer) was late off it at one in RC_LATE_BEAT_OFF
 * of its other collectives or fewer (affected or behind beyond one a
 * beat): a process a loaded machine slowed throughout is late on any beat
 * and off it. */
static int seldom_off(const rc_rank_late *x, size_t on, uint64_t every, uint64_t since)
{
    uint64_t beats = (since + every - 1) / every, all = x->affected - on + x->behind - x->first_behind[on];
    return every < RC_LATE_MAX_EVERY || all <= beats || RC_LATE_BEAT_OFF * (all - beats) <= since - beats;
}

/* Whether a late rank was late from its onset on, at one in
 * RC_LATE_MAX_GAP of its collectives since or more, keeping its beat
 * (held_beat, seldom_off); its onset and frequency in *on and *every. */
static int late_from_onset(const rc_rank_late *x, size_t *on, uint64_t *every)
{
    *every = nsc_rc_late_every(x);
    *on = onset_of(x, *every);
    uint64_t since = x->seen - x->first_seen[*on];
    /* + 1: one of its late collectives a loaded machine hid (another rank
     * later still) must not halve a 1 in RC_LATE_MAX_GAP rank */
    return (x->affected - *on + 1) * RC_LATE_MAX_GAP >= since && held_beat(x, *on, *every, since) &&
           seldom_off(x, *on, *every, since);
}

int nsc_rc_late_sparse(const rc_rank_late *x, size_t *on, uint64_t *every)
{
    return x->affected >= RC_LATE_MIN_OWN && late_from_onset(x, on, every) && *every >= RC_LATE_MAX_EVERY &&
           x->affected - *on >= RC_LATE_MIN_OWN;
}

/* Whether a rank is late from an onset on, always or intermittently
 * (RC_LATE_MIN_OWN, rcint.h), or on a beat (RC_LATE_BEAT_NUM); its onset
 * and frequency in *on and *every. */
static int late_since_onset(const nsc_rc_late *l, const rc_rank_late *x, size_t *on, uint64_t *every)
{
    if (x->own_late < RC_LATE_MIN_OWN)
        return 0;
    if (late_from_onset(x, on, every) && 2 * x->affected > l->own_all)
        return 1;
    return nsc_rc_late_beat(x, on, every);
}

/* The rank late of its own most often of those late from an onset on, its
 * onset and frequency in *on and *every; -1 if none is. */
static int64_t onset_straggler(const nsc_rc_late *l, size_t *on, uint64_t *every)
{
    int64_t best = -1;
    size_t o;
    uint64_t e;
    for (int64_t r = 0; r < l->nranks; r++)
        if ((best < 0 || l->r[r].affected > l->r[best].affected) && late_since_onset(l, &l->r[r], &o, &e))
            best = r, *on = o, *every = e;
    return best;
}

void nsc_rc_check_late(nsc_findings *f, const char *comm, const rc_pass *p)
{
    const nsc_rc_late *l = p->l;
    uint64_t *own = l->scratch, *seen = l->scratch + l->nranks;
    for (int64_t r = 0; r < l->nranks; r++)
        own[r] = l->r[r].own_late, seen[r] = l->r[r].seen;
    int64_t best = nsc_fig_straggler(own, seen, (size_t)l->nranks);
    size_t on = 0;
    uint64_t every = 0;
    if (best >= 0)
        every = nsc_rc_late_every(&l->r[best]), on = onset_of(&l->r[best], every);
    else
        best = onset_straggler(l, &on, &every);
    if (best < 0)
        return;
    /* a rank that keeps a beat is late on it, whatever made it late of its
     * own between (a slow GPU in the other pipeline stage made a training
     * job's late host late at half as many more of its tensor-parallel
     * collectives, off its step's beat: the median gap 10, not 16) */
    size_t beat_on;
    uint64_t beat_every;
    if (nsc_rc_late_beat(&l->r[best], &beat_on, &beat_every))
        on = beat_on, every = beat_every;
    const rc_rank_late *x = &l->r[best];
    uint64_t late = x->host_ns + x->gpu_ns + x->prev_ns;
    int gpu = x->gpu_ns > x->host_ns;
    char often[48] = "every collective";
    if (every > 1)
        snprintf(often, sizeof often, "1 collective in %" PRIu64, every);
    nsc_problem *q = nsc_diag_add(
        f, NSC_SEV_LATE, gpu ? "gpu_late" : "host_late", comm, 0, best,
        "%s: rank %" PRId64 " (%s) arrived last at %" PRIu64 " of %" PRIu64 " collectives (at %" PRIu64
        " by 1 ms or more of its own), %.2f ms late on average (%s); since seq %" PRIu64
        ", %s: the others waited %.2f ms per such collective, %.1f ms in all",
        gpu ? "GPU late" : "host late", best, nsc_rc_host_of(p, (int32_t)best), x->last, x->seen, x->own_late,
        (double)late / (double)x->last / 1e6,
        gpu ? "its GPU started after its enqueue and its previous work" : "its host enqueued after the others were ready",
        x->first_seq[on], often, (double)x->own_cost_ns / (double)(x->affected ? x->affected : 1) / 1e6, (double)x->own_cost_ns / 1e6);
    if (!q)
        return;
    q->seq = x->first_seq[on];
    nsc_diag_began_ns(q, f, x->first_ns[on]);
    snprintf(q->hosts[0], sizeof q->hosts[0], "%s", nsc_rc_host_of(p, (int32_t)best));
    snprintf(q->figures, sizeof q->figures,
             "\"last_arrivals\":%" PRIu64 ",\"late_of_its_own\":%" PRIu64 ",\"collectives\":%" PRIu64
             ",\"host_late_ns\":%" PRIu64 ",\"gpu_late_ns\":%" PRIu64 ",\"inherited_ns\":%" PRIu64
             ",\"cost_ns\":%" PRIu64 ",\"onset_seq\":%" PRIu64 ",\"onset_ns\":%" PRIu64 ",\"every\":%" PRIu64
             ",\"own_cost_ns\":%" PRIu64,
             x->last, x->own_late, x->seen, x->host_ns, x->gpu_ns, x->prev_ns, x->cost_ns, x->first_seq[on],
             x->first_ns[on], every, x->own_cost_ns);
}
