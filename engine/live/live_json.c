/* live_json.c: the live state as the status and summary JSON documents
 * (live.h; docs/api.md): every job, process, agent and communicator with
 * the judgements of live_read.c (alive, lagging, hung, ended), and an ended
 * job's verdict, the one sentence that says where it stopped. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "commlabel.h"
#include "json.h"
#include "live_int.h"
#include "order.h"
#include "utc.h"

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
    nsc_live_front_of(c, &fr);
    for (int f = 0; f < c->nf && !v->ranks; f++)
        for (int behind = 1; behind >= 0 && !v->ranks; behind--)
            for (int32_t k = 0; k < c->nalloc; k++) {
                uint64_t d;
                if (behind ? nsc_live_lagging(l, c, &c->ranks[k], f, at, &d) : nsc_live_hung(l, &fr, &c->ranks[k], f, at))
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
        int lg = !ended && nsc_live_lagging(l, c, r, f, at, &lag), hg = !ended && nsc_live_hung(l, fr, r, f, at);
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
        if (c->ranks[k].p[f].seq < seq && nsc_live_lagging(l, c, &c->ranks[k], f, now, &lag))
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
    nsc_live_front_of(c, &fr);
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
            if (nsc_live_lagging(l, c, &c->ranks[k], f, now, &lag)) {
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
            if (nsc_live_hung(l, &fr, &c->ranks[k], f, now)) {
                fprintf(o, "%s{\"rank\":%d,\"func\":\"%s\",\"seq\":%" PRIu64 ",\"for_ns\":%" PRIu64,
                        n++ ? "," : "", k, c->f[f].name, c->ranks[k].p[f].seq, now - c->ranks[k].p[f].since_ns);
                json_utc(l, "since_utc", c->ranks[k].p[f].since_ns, o);
                fputc('}', o);
            }
    fputs("],\"hung_collectives\":[", o);
    n = 0;
    for (int f = 0; !ended && f < c->nf; f++)
        for (uint64_t s = UINT64_MAX; nsc_live_hung_coll_below(l, c, &fr, f, now, s, &s);)
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
        nsc_json_write_str(o, l->jobs[j].name);
        json_job_drops(l, l->jobs[j].name, o);
        json_job_cost(l, l->jobs[j].name, o);
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
        nsc_json_write_str(o, l->jobs[c->job].name);
        fprintf(o, ",\"comm\":\"0x%" PRIx64 "\",\"events_per_s\":%.1f,\"bus_bw_gbps\":%.3f}", c->id,
                c->rate, c->bw_avg);
    }
    fputs("]}", o);
    return ferror(o) ? -1 : 0;
}

