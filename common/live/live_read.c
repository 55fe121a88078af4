/* live_read.c: reading the live state (live.h, live_int.h): the one
 * definition of a process alive or dead and a job ended (docs/api.md), a
 * rank lagging or hung judged by figures.c's definitions, the counts, each
 * communicator's metrics, and the status and summary JSON documents. Every view (status, watch, diagnose,
 * the web view, /metrics) reads these judgements, never its own. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "commlabel.h"
#include "figures.h"
#include "json.h"
#include "live_int.h"
#include "order.h"
#include "utc.h"

/* ---- judgements ---- */

int nsc_live_proc_alive(const nsc_live *l, const proc_st *p, uint64_t now)
{
    return !p->finished && !p->died && now - p->last_ns <= l->cfg.heartbeat_timeout_ns;
}

uint64_t nsc_live_proc_end(const proc_st *p)
{
    return p->finished && p->finished_ns ? p->finished_ns : p->died ? p->died_ns : p->last_ns;
}

#define ALIVE UINT64_MAX  /* a job's end while one of its processes is alive */

uint64_t *nsc_live_job_ends(const nsc_live *l, uint64_t now)
{
    uint64_t *end = calloc(l->njobs ? l->njobs : 1, sizeof *end);
    if (!end)
        return NULL;
    size_t j = 0;
    for (size_t i = 0; i < l->nprocs; i++) {
        const proc_st *p = &l->procs[i];
        if (j >= l->njobs || strcmp(l->jobs[j], p->job) != 0)  /* a job's processes mostly come together */
            for (j = 0; j < l->njobs && strcmp(l->jobs[j], p->job) != 0; j++)
                ;
        if (j == l->njobs || end[j] == ALIVE)
            continue;
        uint64_t e = nsc_live_proc_alive(l, p, now) ? ALIVE : nsc_live_proc_end(p);
        end[j] = e == ALIVE ? ALIVE : e > now ? now : e > end[j] ? e : end[j];
    }
    for (j = 0; j < l->njobs; j++)
        end[j] = end[j] == ALIVE ? 0 : end[j];
    return end;
}

/* When some rank first went past seq (collector time), or 0 if unknown. */
static uint64_t passed_at(const func_st *fs, uint64_t seq)
{
    uint64_t next = seq + 1;
    return fs->ring_seq[next % SEEN_RING] == next + 1 ? fs->ring_ns[next % SEEN_RING] : 0;
}

/* Lagging (nsc_fig_lagging) in function f. */
static int lagging(const nsc_live *l, const comm_st *c, const rank_st *r, int f, uint64_t now,
                   uint64_t *for_ns)
{
    return r->has[f] && nsc_fig_lagging(r->p[f].seq, c->f[f].max_seq, r->p[f].since_ns,
                                        passed_at(&c->f[f], r->p[f].seq), now, l->cfg.lag_ns, for_ns);
}

/* Per function of a communicator, the furthest collective any rank reached
 * and how many ranks completed it: what hung compares a rank against, made
 * once per communicator (one pass over its ranks, not one per rank). */
typedef struct front {
    uint64_t seq[MAX_FUNCS];
    uint32_t done[MAX_FUNCS];
} front;

static void front_of(const comm_st *c, front *fr)
{
    memset(fr, 0, sizeof *fr);
    for (int32_t k = 0; k < c->nalloc; k++)
        for (int f = 0; f < c->nf; f++) {
            const rank_st *r = &c->ranks[k];
            if (!r->has[f] || r->p[f].seq < fr->seq[f])
                continue;
            if (r->p[f].seq > fr->seq[f])
                fr->seq[f] = r->p[f].seq, fr->done[f] = 0;
            fr->done[f] += (uint32_t)r->p[f].done;
        }
}

/* Hung (nsc_fig_hung) in function f, against the communicator's front. */
static int hung(const nsc_live *l, const front *fr, const rank_st *r, int f, uint64_t now)
{
    return r->has[f] && nsc_fig_hung(r->p[f].seq, r->p[f].done, r->p[f].since_ns, fr->seq[f], fr->done[f], now,
                                     l->cfg.lag_ns);
}

/* The collective a rank is stuck at in function f: the one it is hung in,
 * or, lagging, the one the others are in (the function's furthest seq). */
static int stuck_at(const nsc_live *l, const comm_st *c, const front *fr, const rank_st *r, int f, uint64_t now,
                    uint64_t *seq)
{
    uint64_t d;
    if (hung(l, fr, r, f, now))
        *seq = r->p[f].seq;
    else if (lagging(l, c, r, f, now, &d))
        *seq = c->f[f].max_seq;
    else
        return 0;
    return 1;
}

/* Hung collective (docs/api.md "Hung"): one a rank is stuck at. The
 * function's one with the largest seq below `below`; 0 when none. Walking
 * down from UINT64_MAX lists each once without memory: a communicator's
 * stuck ranks are nearly always at one or two collectives. */
static int hung_coll_below(const nsc_live *l, const comm_st *c, const front *fr, int f, uint64_t now,
                           uint64_t below, uint64_t *seq)
{
    int found = 0;
    uint64_t s;
    for (int32_t k = 0; k < c->nalloc; k++)
        if (stuck_at(l, c, fr, &c->ranks[k], f, now, &s) && s < below && (!found || s > *seq))
            *seq = s, found = 1;
    return found;
}

static uint32_t hung_colls(const nsc_live *l, const comm_st *c, const front *fr, uint64_t now)
{
    uint32_t n = 0;
    for (int f = 0; f < c->nf; f++)
        for (uint64_t s = UINT64_MAX; hung_coll_below(l, c, fr, f, now, s, &s);)
            n++;
    return n;
}

void nsc_live_counts_get(const nsc_live *l, uint64_t now, nsc_live_counts *out)
{
    memset(out, 0, sizeof *out);
    out->events = l->events;
    out->comms = l->ncomms;
    out->jobs = l->njobs;
    out->evicted_jobs = l->evicted_jobs;
    memcpy(out->refused, l->refused, sizeof out->refused);
    out->ledger_dropped = l->ledger_dropped;
    for (size_t i = 0; i < l->nprocs; i++)
        l->procs[i].finished ? out->procs_finished++
        : nsc_live_proc_alive(l, &l->procs[i], now) ? out->procs_alive++ : out->procs_dead++;
    for (size_t i = 0; i < l->nagents; i++)
        now - l->agents[i].last_ns <= l->cfg.heartbeat_timeout_ns ? out->agents_alive++ : out->agents_dead++;
    /* Out of memory: every job judged as running, as before jobs could end. */
    uint64_t *ends = nsc_live_job_ends(l, now);
    for (size_t j = 0; ends && j < l->njobs; j++)
        out->jobs_ended += ends[j] != 0;
    for (size_t i = 0; i < l->ncomms; i++) {
        const comm_st *c = &l->comms[i];
        if (ends && ends[c->job])
            continue;
        front fr;
        front_of(c, &fr);
        for (int32_t k = 0; k < c->nalloc; k++)
            for (int f = 0; f < c->nf; f++) {
                uint64_t d;
                out->lagging += (uint64_t)lagging(l, c, &c->ranks[k], f, now, &d);
                out->hangs += (uint64_t)hung(l, &fr, &c->ranks[k], f, now);
            }
        out->hung_colls += hung_colls(l, c, &fr, now);
    }
    free(ends);
}

/* ---- metrics ---- */

/* Lag, lagging, hangs and in-flight of one communicator of a running job. */
static void comm_judged(const nsc_live *l, const comm_st *c, uint64_t now, nsc_live_comm_stat *o)
{
    front fr;
    front_of(c, &fr);
    for (int32_t k = 0; k < c->nalloc; k++) {
        const rank_st *r = &c->ranks[k];
        for (int f = 0; f < c->nf; f++) {
            uint64_t d = 0;
            o->lagging += (uint32_t)lagging(l, c, r, f, now, &d);
            o->hung += (uint32_t)hung(l, &fr, r, f, now);
            if (d && (double)d / 1e9 > o->lag_s) {
                o->lag_s = (double)d / 1e9;
                o->lag_rank = k;
            }
            if (r->has[f] && !r->p[f].done) {
                double age = (double)(now - r->p[f].since_ns) / 1e9;
                o->in_flight++;
                o->in_flight_max_s = age > o->in_flight_max_s ? age : o->in_flight_max_s;
            }
        }
    }
    o->hung_colls = hung_colls(l, c, &fr, now);
}

/* ended: its job's end, 0 while it runs (its lag and hangs then stay 0). */
static void comm_stat(const nsc_live *l, const comm_st *c, uint64_t now, uint64_t ended, nsc_live_comm_stat *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->job, sizeof o->job, "%s", l->jobs[c->job]);
    snprintf(o->name, sizeof o->name, "%s", c->name);
    o->id = c->id;
    o->nranks = c->nranks;
    o->events = c->events;
    o->bus_bw = c->bw_avg * 1e9;  /* bytes per ns */
    o->arrival = c->arrival;
    o->lag_rank = -1;
    for (int32_t k = 0; k < c->nalloc; k++)
        o->ranks_seen += c->ranks[k].seen;
    if (!ended)
        comm_judged(l, c, now, o);
    o->nf = c->nf;
    for (int f = 0; f < c->nf; f++) {
        const func_st *fs = &c->f[f];
        nsc_live_func_stat *of = &o->f[f];
        snprintf(of->name, sizeof of->name, "%s", fs->name);
        of->collectives = fs->max_seq + 1;
        of->duration = fs->duration;
    }
}

typedef struct recent {
    uint64_t last_ns;
    size_t index;
} recent;

static int most_recent_first(const void *a, const void *b)
{
    const recent *x = a, *y = b;
    return x->last_ns != y->last_ns ? (x->last_ns < y->last_ns ? 1 : -1) : (x->index > y->index) - (x->index < y->index);
}

int nsc_live_comm_stats(const nsc_live *l, uint64_t now, size_t max, nsc_live_comm_stat **out,
                        size_t *n, size_t *omitted)
{
    size_t want = max < l->ncomms ? max : l->ncomms;
    *out = NULL;
    *n = 0;
    *omitted = l->ncomms - want;
    if (!want)
        return 0;
    recent *order = malloc(l->ncomms * sizeof *order);
    uint64_t *ends = nsc_live_job_ends(l, now);
    *out = malloc(want * sizeof **out);
    if (!order || !ends || !*out) {
        free(order);
        free(ends);
        free(*out);
        *out = NULL;
        return -1;
    }
    for (size_t i = 0; i < l->ncomms; i++)
        order[i] = (recent){l->comms[i].last_ns, i};
    qsort(order, l->ncomms, sizeof *order, most_recent_first);
    for (; *n < want; (*n)++) {
        const comm_st *c = &l->comms[order[*n].index];
        comm_stat(l, c, now, ends[c->job], &(*out)[*n]);
    }
    free(order);
    free(ends);
    return 0;
}

/* ---- JSON ---- */

static const char *reason_name(int reason)
{
    return reason == NSC_A2C_REASON_EXITED ? "exited" : reason == NSC_A2C_REASON_SILENT ? "silent" : "unknown";
}

static const char *proc_state(const nsc_live *l, const proc_st *p, uint64_t now)
{
    return p->finished ? "finished" : p->died ? "dead" : nsc_live_proc_alive(l, p, now) ? "alive" : "silent";
}

/* A time of the state's clock as people read it ("12:04:31 UTC"), or on
 * the collector's clock where the wall clock is unknown. */
static void fmt_at(const nsc_live *l, uint64_t t, char *buf, size_t cap)
{
    char iso[NSC_UTC_MAX];  /* "2026-11-28T12:04:31.123456Z": its time of day */
    if (l->has_wall) {
        nsc_utc_iso((int64_t)t + l->wall_ns, iso, sizeof iso);
        if (strlen(iso) >= 19) {
            snprintf(buf, cap, "%.8s UTC", iso + 11);
            return;
        }
    }
    snprintf(buf, cap, "%.3f s on the collector's clock", (double)t / 1e9);
}

/* What is known of a rank's process, said once for every view: "alive",
 * "alive until T" (its plugin finished), "dead since T (exited)", "silent
 * since T" (not heard for the heartbeat timeout, no death record yet). */
static void proc_life(const nsc_live *l, const proc_st *p, uint64_t now, char *buf, size_t cap)
{
    char at[48];
    if (!p) {
        snprintf(buf, cap, "unknown");
        return;
    }
    if (nsc_live_proc_alive(l, p, now)) {
        snprintf(buf, cap, "alive");
        return;
    }
    fmt_at(l, nsc_live_proc_end(p), at, sizeof at);
    if (p->finished)
        snprintf(buf, cap, "alive until %s", at);
    else if (p->died)
        snprintf(buf, cap, "dead since %s (%s)", at, reason_name(p->reason));
    else
        snprintf(buf, cap, "silent since %s", at);
}

static const proc_st *proc_of(const nsc_live *l, const rank_st *r)
{
    return r->proc ? &l->procs[r->proc - 1] : NULL;
}

/* ---- an ended job's verdict ---- */

#define VERDICT_RANKS 4  /* ranks named in a verdict; the rest counted */

typedef struct verdict {
    char text[640];
    size_t len, ranks;
    const comm_st *comm;
} verdict;

static void say(verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(verdict *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = v->len < sizeof v->text ? vsnprintf(v->text + v->len, sizeof v->text - v->len, fmt, ap) : 0;
    va_end(ap);
    v->len += w > 0 ? (size_t)w : 0;
    v->len = v->len < sizeof v->text ? v->len : sizeof v->text - 1;
}

/* One stuck rank of the verdict (the first opens it with the place); its
 * process as it is known now. */
static void say_rank(verdict *v, const nsc_live *l, const comm_st *c, int f, uint64_t seq, int32_t k,
                     const char *what, uint64_t now)
{
    char life[96];
    if (v->ranks++ == 0) {
        v->comm = c;
        say(v, "ended hung at %s seq %" PRIu64 ": ", c->f[f].name, seq);
    }
    if (v->ranks > VERDICT_RANKS)
        return;
    proc_life(l, proc_of(l, &c->ranks[k]), now, life, sizeof life);
    say(v, "%srank %d %s (process %s)", v->ranks > 1 ? "; " : "", k, what, life);
}

/* Where an ended communicator stopped, at its end `at`: the ranks lagging
 * (never arrived at the collective the others are in), else the ranks hung
 * in it; nothing when no rank is stuck. */
static void stuck_in(verdict *v, const nsc_live *l, const comm_st *c, uint64_t at, uint64_t now)
{
    front fr;
    front_of(c, &fr);
    for (int f = 0; f < c->nf && !v->ranks; f++)
        for (int behind = 1; behind >= 0 && !v->ranks; behind--)
            for (int32_t k = 0; k < c->nalloc; k++) {
                uint64_t d;
                if (behind ? lagging(l, c, &c->ranks[k], f, at, &d) : hung(l, &fr, &c->ranks[k], f, at))
                    say_rank(v, l, c, f, fr.seq[f], k, behind ? "never arrived" : "never completed it", now);
            }
}

/* A collective left in flight where no rank was stuck long enough to be
 * lagging or hung (the job stopped inside it). */
static void in_flight_at_end(verdict *v, const comm_st *c)
{
    for (int f = 0; f < c->nf && !v->ranks; f++)
        for (int32_t k = 0; k < c->nalloc; k++) {
            const rank_st *r = &c->ranks[k];
            if (!r->has[f] || r->p[f].done)
                continue;
            if (v->ranks++ == 0) {
                v->comm = c;
                say(v, "ended inside %s seq %" PRIu64 ", not completed on rank", c->f[f].name, r->p[f].seq);
            }
            if (v->ranks <= VERDICT_RANKS)
                say(v, "%s %d", v->ranks > 1 ? "," : "", k);
        }
}

static void job_verdict(const nsc_live *l, uint32_t job, uint64_t at, uint64_t now, verdict *v)
{
    memset(v, 0, sizeof *v);
    for (size_t i = 0; i < l->ncomms && !v->ranks; i++)
        if (l->comms[i].job == job)
            stuck_in(v, l, &l->comms[i], at, now);
    for (size_t i = 0; i < l->ncomms && !v->ranks; i++)
        if (l->comms[i].job == job)
            in_flight_at_end(v, &l->comms[i]);
    if (v->ranks > VERDICT_RANKS)
        say(v, "; %zu more rank%s", v->ranks - VERDICT_RANKS, v->ranks - VERDICT_RANKS > 1 ? "s" : "");
    if (!v->ranks)
        say(v, "ended: every collective completed");
}

static uint64_t per_type_sum(const uint64_t v[NSC_T_COUNT])
{
    uint64_t n = 0;
    for (int t = 0; t < NSC_T_COUNT; t++)
        n += v[t];
    return n;
}

/* A job's drops, as its processes last counted them: events (in total and by
 * type, the types with none left out) and states, which are not events. */
static void json_job_drops(const nsc_live *l, const char *job, FILE *o)
{
    uint64_t by_type[NSC_T_COUNT] = {0}, states = 0;
    for (size_t i = 0; i < l->nprocs; i++)
        if (strcmp(l->procs[i].job, job) == 0) {
            for (int t = 0; t < NSC_T_COUNT; t++)
                by_type[t] += l->procs[i].counters.dropped[t];
            states += l->procs[i].counters.states_dropped;
        }
    fprintf(o, ",\"events_dropped\":%" PRIu64 ",\"states_dropped\":%" PRIu64 ",\"events_dropped_by_type\":{",
            per_type_sum(by_type), states);
    int n = 0;
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        if (by_type[t])
            fprintf(o, "%s\"%s\":%" PRIu64, n++ ? "," : "", nsc_type_name(t), by_type[t]);
    fputc('}', o);
}

/* ,"<key>":"<UTC ISO-8601>" of time t (common/utc.h), or null while the wall
 * clock is not known. */
static void json_utc(const nsc_live *l, const char *key, uint64_t t, FILE *o)
{
    char utc[NSC_UTC_MAX];
    if (!l->has_wall) {
        fprintf(o, ",\"%s\":null", key);
        return;
    }
    nsc_utc_iso((int64_t)t + l->wall_ns, utc, sizeof utc);
    fprintf(o, ",\"%s\":\"%s\"", key, utc);
}

/* Event types of a mask, by name: ["ProxyStep","NetPlugin"]. */
static void json_type_names(uint64_t mask, FILE *o)
{
    fputc('[', o);
    int n = 0;
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        if (mask >> t & 1)
            fprintf(o, "%s\"%s\"", n++ ? "," : "", nsc_type_name(t));
    fputc(']', o);
}

/* The self-cost guard's word on a job: the plugins' measured cost as a share
 * of their collectives' time (null before any collective), and the types any
 * of its processes sheds now, so a view can say why that detail is missing. */
static void json_job_cost(const nsc_live *l, const char *job, FILE *o)
{
    uint64_t cost = 0, coll = 0, shed = 0, shed_events = 0, since = 0;
    for (size_t i = 0; i < l->nprocs; i++) {
        const proc_st *p = &l->procs[i];
        if (strcmp(p->job, job) != 0)
            continue;
        cost += p->counters.cost_ns;
        coll += p->counters.coll_ns;
        shed |= p->counters.shed_mask;
        shed_events += p->counters.shed_events;
        if (p->counters.shed_mask && p->shed_ns > since)
            since = p->shed_ns;
    }
    if (coll)
        fprintf(o, ",\"profiler_cost_pct\":%.3f", 100.0 * (double)cost / (double)coll);
    else
        fputs(",\"profiler_cost_pct\":null", o);
    fputs(",\"shed\":", o);
    json_type_names(shed, o);
    fprintf(o, ",\"shed_events\":%" PRIu64 ",\"shed_since_ns\":%" PRIu64, shed_events, since);
}

static void json_procs(const nsc_live *l, uint64_t now, FILE *o)
{
    fputs("\"processes\":[", o);
    for (size_t i = 0; i < l->nprocs; i++) {
        const proc_st *p = &l->procs[i];
        fprintf(o, "%s{\"host\":", i ? "," : "");
        nsc_json_write_str(o, p->host);
        fprintf(o, ",\"pid\":%" PRIu32 ",\"job\":", p->pid);
        nsc_json_write_str(o, p->job);
        fputs(",\"agent\":", o);
        nsc_json_write_str(o, p->agent);
        fprintf(o, ",\"state\":\"%s\",\"reason\":", proc_state(l, p, now));
        if (p->died)
            fprintf(o, "\"%s\"", reason_name(p->reason));
        else
            fputs("null", o);
        const nsc_counters *c = &p->counters;
        fprintf(o, ",\"last_seen_ns\":%" PRIu64, p->last_ns);
        json_utc(l, "last_seen_utc", p->last_ns, o);
        fprintf(o, ",\"events_emitted\":%" PRIu64 ",\"events_dropped\":%" PRIu64 ",\"states_emitted\":%" PRIu64
                   ",\"states_dropped\":%" PRIu64,
                per_type_sum(c->emitted), per_type_sum(c->dropped), c->states_emitted, c->states_dropped);
        fprintf(o, ",\"profiler_cost_ns\":%" PRIu64 ",\"collective_ns\":%" PRIu64 ",\"shed\":", c->cost_ns,
                c->coll_ns);
        json_type_names(c->shed_mask, o);
        fprintf(o, ",\"shed_events\":%" PRIu64 ",\"shed_changes\":%" PRIu64 ",\"shed_since_ns\":%" PRIu64 "}",
                c->shed_events, c->shed_changes, c->shed_mask ? p->shed_ns : 0);
    }
    fputs("]", o);
}

static void json_agents(const nsc_live *l, uint64_t now, FILE *o)
{
    fputs("\"agents\":[", o);
    for (size_t i = 0; i < l->nagents; i++) {
        const agent_st *a = &l->agents[i];
        fprintf(o, "%s{\"agent\":", i ? "," : "");
        nsc_json_write_str(o, a->id);
        fputs(",\"host\":", o);
        nsc_json_write_str(o, a->host);
        fprintf(o, ",\"state\":\"%s\",\"last_seen_ns\":%" PRIu64,
                now - a->last_ns <= l->cfg.heartbeat_timeout_ns ? "alive" : "dead", a->last_ns);
        json_utc(l, "last_seen_utc", a->last_ns, o);
        fputc('}', o);
    }
    fputs("]", o);
}

/* A rank: its process now, its collectives at `at` (its job's clock, now
 * while it runs), judged lagging or hung only while its job runs (ended 0). */
static void json_rank(const nsc_live *l, const comm_st *c, const front *fr, int32_t k, uint64_t now,
                      uint64_t ended, FILE *o, int first)
{
    const rank_st *r = &c->ranks[k];
    const proc_st *p = proc_of(l, r);
    uint64_t at = ended ? ended : now;
    char life[96];
    proc_life(l, p, now, life, sizeof life);
    fprintf(o, "%s{\"rank\":%d,\"host\":", first ? "" : ",", k);
    nsc_json_write_str(o, r->host);
    fprintf(o, ",\"pid\":%" PRIu32 ",\"state\":\"%s\",\"process\":", r->pid, p ? proc_state(l, p, now) : "unknown");
    nsc_json_write_str(o, life);
    fputs(",\"collectives\":[", o);
    int n = 0;
    for (int f = 0; f < c->nf; f++) {
        if (!r->has[f])
            continue;
        uint64_t lag = 0;
        int lg = !ended && lagging(l, c, r, f, at, &lag), hg = !ended && hung(l, fr, r, f, at);
        fprintf(o, "%s{\"func\":\"%s\",\"seq\":%" PRIu64 ",\"in_flight\":%s,\"for_ns\":%" PRIu64
                   ",\"lagging\":%s,\"hung\":%s}",
                n++ ? "," : "", c->f[f].name, r->p[f].seq, r->p[f].done ? "false" : "true",
                at > r->p[f].since_ns ? at - r->p[f].since_ns : 0, lg ? "true" : "false", hg ? "true" : "false");
    }
    fputs("]}", o);
}

/* A hung collective: the ranks inside it (in flight there) and the ranks
 * stuck behind it (lagging, their last seq before it). */
static void json_hung_coll(const nsc_live *l, const comm_st *c, int f, uint64_t seq, uint64_t now, FILE *o,
                           int first)
{
    fprintf(o, "%s{\"func\":\"%s\",\"seq\":%" PRIu64 ",\"inside\":[", first ? "" : ",", c->f[f].name, seq);
    int n = 0;
    for (int32_t k = 0; k < c->nalloc; k++) {
        const rank_st *r = &c->ranks[k];
        if (r->has[f] && !r->p[f].done && r->p[f].seq == seq)
            fprintf(o, "%s{\"rank\":%d,\"for_ns\":%" PRIu64 "}", n++ ? "," : "", k,
                    now > r->p[f].since_ns ? now - r->p[f].since_ns : 0);
    }
    fputs("],\"behind\":[", o);
    n = 0;
    for (int32_t k = 0; k < c->nalloc; k++) {
        uint64_t lag;
        if (c->ranks[k].p[f].seq < seq && lagging(l, c, &c->ranks[k], f, now, &lag))
            fprintf(o, "%s{\"rank\":%d,\"seq\":%" PRIu64 ",\"for_ns\":%" PRIu64 "}", n++ ? "," : "", k,
                    c->ranks[k].p[f].seq, lag);
    }
    fputs("]}", o);
}

/* Distinct hosts of c's ranks seen (sorted, then counted): -1 memory. */
static long comm_hosts(const comm_st *c)
{
    const char **h = malloc((c->nalloc > 0 ? (size_t)c->nalloc : 1) * sizeof *h);
    if (!h)
        return -1;
    size_t n = 0, d = 0;
    for (int32_t k = 0; k < c->nalloc; k++)
        if (c->ranks[k].seen)
            h[n++] = c->ranks[k].host;
    if (n)
        qsort(h, n, sizeof *h, nsc_cmp_str);
    for (size_t i = 0; i < n; i++)
        d += i == 0 || strcmp(h[i - 1], h[i]) != 0;
    free(h);
    return (long)d;
}

/* A communicator at `now`, or at its job's end (ended, nonzero): an ended
 * job's ranks are neither lagging nor hung, its verdict says where it stopped. */
static void json_comm(const nsc_live *l, const comm_st *c, const char *label, uint64_t now, uint64_t ended,
                      FILE *o)
{
    int32_t seen = 0;
    front fr;
    front_of(c, &fr);
    for (int32_t k = 0; k < c->nalloc; k++)
        seen += c->ranks[k].seen;
    fprintf(o, "{\"comm\":\"0x%" PRIx64 "\",\"name\":", c->id);
    nsc_json_write_str(o, c->name);
    fputs(",\"label\":", o);
    nsc_json_write_str(o, label);
    fprintf(o, ",\"nranks\":%d,\"ranks_seen\":%d,\"events_total\":%" PRIu64
               ",\"events_per_s\":%.1f,\"bus_bw_gbps\":%.3f,\"source\":\"%s\",\"funcs\":[",
            c->nranks, seen, c->events, c->rate, c->bw_avg, c->from_ledger ? "ledger" : "events");
    for (int f = 0; f < c->nf; f++)
        fprintf(o, "%s{\"func\":\"%s\",\"max_seq\":%" PRIu64 ",\"durations\":%" PRIu64 ",\"duration_sum_s\":%.9f}",
                f ? "," : "", c->f[f].name, c->f[f].max_seq, c->f[f].duration.count, c->f[f].duration.sum_s);
    fputs("],\"lagging\":[", o);
    int n = 0;
    for (int32_t k = 0; !ended && k < c->nalloc; k++)
        for (int f = 0; f < c->nf; f++) {
            uint64_t lag;
            if (lagging(l, c, &c->ranks[k], f, now, &lag)) {
                fprintf(o, "%s{\"rank\":%d,\"func\":\"%s\",\"seq\":%" PRIu64 ",\"max_seq\":%" PRIu64 ",\"for_ns\":%" PRIu64,
                        n++ ? "," : "", k, c->f[f].name, c->ranks[k].p[f].seq, c->f[f].max_seq, lag);
                json_utc(l, "since_utc", now - lag, o);
                fputc('}', o);
            }
        }
    fputs("],\"hangs\":[", o);
    n = 0;
    for (int32_t k = 0; !ended && k < c->nalloc; k++)
        for (int f = 0; f < c->nf; f++)
            if (hung(l, &fr, &c->ranks[k], f, now)) {
                fprintf(o, "%s{\"rank\":%d,\"func\":\"%s\",\"seq\":%" PRIu64 ",\"for_ns\":%" PRIu64,
                        n++ ? "," : "", k, c->f[f].name, c->ranks[k].p[f].seq, now - c->ranks[k].p[f].since_ns);
                json_utc(l, "since_utc", c->ranks[k].p[f].since_ns, o);
                fputc('}', o);
            }
    fputs("],\"hung_collectives\":[", o);
    n = 0;
    for (int f = 0; !ended && f < c->nf; f++)
        for (uint64_t s = UINT64_MAX; hung_coll_below(l, c, &fr, f, now, s, &s);)
            json_hung_coll(l, c, f, s, now, o, n++ == 0);
    fputs("],\"ranks\":[", o);
    n = 0;
    for (int32_t k = 0; k < c->nalloc; k++)
        if (c->ranks[k].seen)
            json_rank(l, c, &fr, k, now, ended, o, n++ == 0);
    fputs("]}", o);
}

/* A job's state: running, or ended with its end and verdict. */
static void json_job_state(const nsc_live *l, uint32_t job, uint64_t now, uint64_t ended, FILE *o)
{
    if (!ended) {
        fputs(",\"state\":\"running\",\"ended_ns\":null,\"verdict\":null,\"verdict_comm\":null", o);
        return;
    }
    verdict v;
    job_verdict(l, job, ended, now, &v);
    fprintf(o, ",\"state\":\"ended\",\"ended_ns\":%" PRIu64 ",\"verdict\":", ended);
    nsc_json_write_str(o, v.text);
    if (v.comm)
        fprintf(o, ",\"verdict_comm\":\"0x%" PRIx64 "\"", v.comm->id);
    else
        fputs(",\"verdict_comm\":null", o);
}

int nsc_live_status_json(const nsc_live *l, uint64_t now, FILE *o)
{
    nsc_live_counts cn;
    nsc_live_counts_get(l, now, &cn);
    uint64_t *ends = nsc_live_job_ends(l, now);
    if (!ends)
        return -1;
    fprintf(o, "{\"now_ns\":%" PRIu64, now);
    json_utc(l, "now_utc", now, o);
    if (l->has_wall)
        fprintf(o, ",\"wall_offset_ns\":%" PRId64, l->wall_ns);
    fprintf(o, ",\"events_total\":%" PRIu64 ",\"hangs\":%" PRIu64 ",\"hung_collectives\":%" PRIu64
               ",\"lagging\":%" PRIu64 ",", l->events, cn.hangs, cn.hung_colls, cn.lagging);
    json_agents(l, now, o);
    fputc(',', o);
    json_procs(l, now, o);
    fputs(",\"jobs\":[", o);
    /* per job, its communicators' labels (commlabel.h) */
    nsc_comm_look *look = malloc((l->ncomms ? l->ncomms : 1) * sizeof *look);
    const comm_st **of = malloc((l->ncomms ? l->ncomms : 1) * sizeof *of);
    int rc = look && of ? 0 : -1;
    for (size_t j = 0; !rc && j < l->njobs; j++) {
        fprintf(o, "%s{\"job\":", j ? "," : "");
        nsc_json_write_str(o, l->jobs[j]);
        json_job_drops(l, l->jobs[j], o);
        json_job_cost(l, l->jobs[j], o);
        json_job_state(l, (uint32_t)j, now, ends[j], o);
        fputs(",\"comms\":[", o);
        size_t n = 0;
        for (size_t i = 0; !rc && i < l->ncomms; i++)
            if (l->comms[i].job == j) {
                long hosts = comm_hosts(&l->comms[i]);
                of[n] = &l->comms[i];
                look[n++] = (nsc_comm_look){l->comms[i].id, l->comms[i].name, l->comms[i].nranks, (size_t)hosts};
                rc = hosts < 0 ? -1 : 0;
            }
        for (size_t i = 0; !rc && i < n; i++) {
            char label[NSC_COMM_LABEL_MAX];
            nsc_comm_label(look, n, i, label, sizeof label);
            if (i)
                fputc(',', o);
            json_comm(l, of[i], label, now, ends[j], o);
        }
        fputs("]}", o);
    }
    free(look);
    free(of);
    fputs("]}\n", o);
    free(ends);
    return rc || ferror(o) ? -1 : 0;
}

int nsc_live_summary_json(const nsc_live *l, uint64_t now, FILE *o)
{
    nsc_live_counts cn;
    nsc_live_counts_get(l, now, &cn);
    double rate = 0;
    for (size_t i = 0; i < l->ncomms; i++)
        rate += l->comms[i].rate;
    fprintf(o, "{\"now_ns\":%" PRIu64 ",\"events_total\":%" PRIu64 ",\"events_per_s\":%.1f"
               ",\"processes_alive\":%" PRIu64 ",\"processes_dead\":%" PRIu64
               ",\"processes_finished\":%" PRIu64 ",\"agents_alive\":%" PRIu64
               ",\"agents_dead\":%" PRIu64 ",\"hangs\":%" PRIu64 ",\"hung_collectives\":%" PRIu64
               ",\"lagging\":%" PRIu64 ",\"jobs_ended\":%" PRIu64 ",\"comms\":[",
            now, l->events, rate, cn.procs_alive, cn.procs_dead, cn.procs_finished, cn.agents_alive,
            cn.agents_dead, cn.hangs, cn.hung_colls, cn.lagging, cn.jobs_ended);
    for (size_t i = 0; i < l->ncomms; i++) {
        const comm_st *c = &l->comms[i];
        fprintf(o, "%s{\"job\":", i ? "," : "");
        nsc_json_write_str(o, l->jobs[c->job]);
        fprintf(o, ",\"comm\":\"0x%" PRIx64 "\",\"events_per_s\":%.1f,\"bus_bw_gbps\":%.3f}", c->id,
                c->rate, c->bw_avg);
    }
    fputs("]}", o);
    return ferror(o) ? -1 : 0;
}

