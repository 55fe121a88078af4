/* live_read.c: reading the live state (live.h, live_int.h): whether a
 * process is alive and a rank lagging or hung, the counts, each
 * communicator's metrics, and the status and summary JSON documents. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "commlabel.h"
#include "json.h"
#include "live_int.h"
#include "order.h"
#include "utc.h"

/* ---- judgements ---- */

static int proc_alive(const nsc_live *l, const proc_st *p, uint64_t now)
{
    return !p->died && now - p->last_ns <= l->cfg.heartbeat_timeout_ns;
}

/* When some rank first went past seq (collector time), or 0 if unknown. */
static uint64_t passed_at(const func_st *fs, uint64_t seq)
{
    uint64_t next = seq + 1;
    return fs->ring_seq[next % SEEN_RING] == next + 1 ? fs->ring_ns[next % SEEN_RING] : 0;
}

/* Lagging (RAS): behind the communicator's furthest rank for longer than lag_ns. */
static int lagging(const nsc_live *l, const comm_st *c, const rank_st *r, int f, uint64_t now,
                   uint64_t *for_ns)
{
    if (!r->has[f] || r->p[f].seq >= c->f[f].max_seq)
        return 0;
    uint64_t since = passed_at(&c->f[f], r->p[f].seq);
    if (since < r->p[f].since_ns)
        since = r->p[f].since_ns;
    *for_ns = now - since;
    return *for_ns > l->cfg.lag_ns;
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

/* Hung: its last collective is in flight past lag_ns while another rank
 * completed it or went past it (the front is further, or some rank there
 * completed it: not this one, which has not). */
static int hung(const nsc_live *l, const front *fr, const rank_st *r, int f, uint64_t now)
{
    if (!r->has[f] || r->p[f].done || now - r->p[f].since_ns <= l->cfg.lag_ns)
        return 0;
    return r->p[f].seq < fr->seq[f] || fr->done[f] > 0;
}

void nsc_live_counts_get(const nsc_live *l, uint64_t now, nsc_live_counts *out)
{
    memset(out, 0, sizeof *out);
    out->events = l->events;
    out->comms = l->ncomms;
    out->jobs = l->njobs;
    out->evicted_jobs = l->evicted_jobs;
    memcpy(out->refused, l->refused, sizeof out->refused);
    for (size_t i = 0; i < l->nprocs; i++)
        l->procs[i].finished ? out->procs_finished++
        : proc_alive(l, &l->procs[i], now) ? out->procs_alive++ : out->procs_dead++;
    for (size_t i = 0; i < l->nagents; i++)
        now - l->agents[i].last_ns <= l->cfg.heartbeat_timeout_ns ? out->agents_alive++ : out->agents_dead++;
    for (size_t i = 0; i < l->ncomms; i++) {
        const comm_st *c = &l->comms[i];
        front fr;
        front_of(c, &fr);
        for (int32_t k = 0; k < c->nalloc; k++)
            for (int f = 0; f < c->nf; f++) {
                uint64_t d;
                out->lagging += (uint64_t)lagging(l, c, &c->ranks[k], f, now, &d);
                out->hangs += (uint64_t)hung(l, &fr, &c->ranks[k], f, now);
            }
    }
}

/* ---- metrics ---- */

/* Lag, lagging, hangs and in-flight of one communicator. */
static void comm_judged(const nsc_live *l, const comm_st *c, uint64_t now, nsc_live_comm_stat *o)
{
    o->lag_rank = -1;
    front fr;
    front_of(c, &fr);
    for (int32_t k = 0; k < c->nalloc; k++) {
        const rank_st *r = &c->ranks[k];
        o->ranks_seen += r->seen;
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
}

static void comm_stat(const nsc_live *l, const comm_st *c, uint64_t now, nsc_live_comm_stat *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->job, sizeof o->job, "%s", l->jobs[c->job]);
    snprintf(o->name, sizeof o->name, "%s", c->name);
    o->id = c->id;
    o->nranks = c->nranks;
    o->events = c->events;
    o->bus_bw = c->bw_avg * 1e9;  /* bytes per ns */
    o->arrival = c->arrival;
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
    *out = malloc(want * sizeof **out);
    if (!order || !*out) {
        free(order);
        free(*out);
        *out = NULL;
        return -1;
    }
    for (size_t i = 0; i < l->ncomms; i++)
        order[i] = (recent){l->comms[i].last_ns, i};
    qsort(order, l->ncomms, sizeof *order, most_recent_first);
    for (; *n < want; (*n)++)
        comm_stat(l, &l->comms[order[*n].index], now, &(*out)[*n]);
    free(order);
    return 0;
}

/* ---- JSON ---- */

static const char *reason_name(int reason)
{
    return reason == NSC_A2C_REASON_EXITED ? "exited" : reason == NSC_A2C_REASON_SILENT ? "silent" : "unknown";
}

static const char *proc_state(const nsc_live *l, const proc_st *p, uint64_t now)
{
    return p->finished ? "finished" : p->died ? "dead" : proc_alive(l, p, now) ? "alive" : "silent";
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
                   ",\"states_dropped\":%" PRIu64 "}",
                per_type_sum(c->emitted), per_type_sum(c->dropped), c->states_emitted, c->states_dropped);
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

static void json_rank(const nsc_live *l, const comm_st *c, const front *fr, int32_t k, uint64_t now, FILE *o,
                      int first)
{
    const rank_st *r = &c->ranks[k];
    const proc_st *p = r->proc ? &l->procs[r->proc - 1] : NULL;
    fprintf(o, "%s{\"rank\":%d,\"host\":", first ? "" : ",", k);
    nsc_json_write_str(o, r->host);
    fprintf(o, ",\"pid\":%" PRIu32 ",\"state\":\"%s\",\"collectives\":[", r->pid,
            p ? proc_state(l, p, now) : "unknown");
    int n = 0;
    for (int f = 0; f < c->nf; f++) {
        if (!r->has[f])
            continue;
        uint64_t lag = 0;
        int lg = lagging(l, c, r, f, now, &lag);
        fprintf(o, "%s{\"func\":\"%s\",\"seq\":%" PRIu64 ",\"in_flight\":%s,\"for_ns\":%" PRIu64
                   ",\"lagging\":%s,\"hung\":%s}",
                n++ ? "," : "", c->f[f].name, r->p[f].seq, r->p[f].done ? "false" : "true",
                now - r->p[f].since_ns, lg ? "true" : "false", hung(l, fr, r, f, now) ? "true" : "false");
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

static void json_comm(const nsc_live *l, const comm_st *c, const char *label, uint64_t now, FILE *o)
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
               ",\"events_per_s\":%.1f,\"bus_bw_gbps\":%.3f,\"funcs\":[",
            c->nranks, seen, c->events, c->rate, c->bw_avg);
    for (int f = 0; f < c->nf; f++)
        fprintf(o, "%s{\"func\":\"%s\",\"max_seq\":%" PRIu64 "}", f ? "," : "", c->f[f].name, c->f[f].max_seq);
    fputs("],\"lagging\":[", o);
    int n = 0;
    for (int32_t k = 0; k < c->nalloc; k++)
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
    for (int32_t k = 0; k < c->nalloc; k++)
        for (int f = 0; f < c->nf; f++)
            if (hung(l, &fr, &c->ranks[k], f, now)) {
                fprintf(o, "%s{\"rank\":%d,\"func\":\"%s\",\"seq\":%" PRIu64 ",\"for_ns\":%" PRIu64,
                        n++ ? "," : "", k, c->f[f].name, c->ranks[k].p[f].seq, now - c->ranks[k].p[f].since_ns);
                json_utc(l, "since_utc", c->ranks[k].p[f].since_ns, o);
                fputc('}', o);
            }
    fputs("],\"ranks\":[", o);
    n = 0;
    for (int32_t k = 0; k < c->nalloc; k++)
        if (c->ranks[k].seen)
            json_rank(l, c, &fr, k, now, o, n++ == 0);
    fputs("]}", o);
}

int nsc_live_status_json(const nsc_live *l, uint64_t now, FILE *o)
{
    nsc_live_counts cn;
    nsc_live_counts_get(l, now, &cn);
    fprintf(o, "{\"now_ns\":%" PRIu64, now);
    json_utc(l, "now_utc", now, o);
    if (l->has_wall)
        fprintf(o, ",\"wall_offset_ns\":%" PRId64, l->wall_ns);
    fprintf(o, ",\"events_total\":%" PRIu64 ",\"hangs\":%" PRIu64 ",\"lagging\":%" PRIu64 ",", l->events,
            cn.hangs, cn.lagging);
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
            json_comm(l, of[i], label, now, o);
        }
        fputs("]}", o);
    }
    free(look);
    free(of);
    fputs("]}\n", o);
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
               ",\"agents_dead\":%" PRIu64 ",\"hangs\":%" PRIu64 ",\"lagging\":%" PRIu64 ",\"comms\":[",
            now, l->events, rate, cn.procs_alive, cn.procs_dead, cn.procs_finished, cn.agents_alive,
            cn.agents_dead,
            cn.hangs, cn.lagging);
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

