/* rcmetrics.c: root-cause metrics (see rcmetrics.h). */
#include "rcmetrics.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "diagapi.h"
#include "grow.h"
#include "jobmetrics.h"
#include "json.h"
#include "logsafe.h"
#include "mono.h"
#include "prom.h"
#include "statusdoc.h"
#include "utc.h"
#include "vfetch.h"
#include "vposts.h"
#include "webhook.h"

#define RCM_POLL_MS 100
/* Verdicts a job holds at most, those of the last pass and those carried
 * from before its window. */
#define RCM_MAX_HELD (2 * NSC_DIAG_MAX_PROBLEMS)

typedef struct job_result {
    char name[128];
    int done, seen;
    nsc_rcm_view seen_with;  /* what the pass that analysed it saw */
    uint64_t quiet_ns;  /* since when none of them is alive (0: one is) */
    nsc_problem *p;  /* its problems (places and kinds are what is used) */
    size_t n;
    nsc_vposts posts;  /* its verdicts, which of them were posted (vposts.h) */
    nsc_rc_carry carry;  /* a windowed pass: what it goes on from (diag.h) */
} job_result;

typedef struct pair_count {
    char src[64], dst[64];
    uint64_t jobs;
} pair_count;

struct nsc_rcmetrics {
    nsc_collector *c;
    pthread_t thread;
    pthread_mutex_t mu;  /* guards text */
    struct evbuffer *text;  /* the families of the last pass */
    job_result *jobs;    /* the thread's own */
    size_t njobs, jobs_cap;
    nsc_webhook *hook;   /* NULL without webhook_url */
    uint64_t passes;     /* passes rendered */
    uint64_t triggered;  /* passes run early for new ledger records */
    uint64_t ledger_seen;  /* ledger records stored when the last pass began */
    uint64_t settles_at;   /* a verdict held becomes one to post then (monotonic; 0: none waits) */
    uint64_t cpu_ns;     /* the thread's CPU time in passes, all of them */
    uint64_t version_reads;  /* store versions read (ended jobs, rootcause_recheck_ms) */
    uint64_t blocks;     /* raw event blocks the passes' queries decoded */
    nsc_vfetch *vf;      /* detail = on-demand: the verdicts' fetches (vfetch.h), else NULL */
};

/* The job's processes in the status; *alive: how many of them are alive. */
static size_t job_procs(const nsc_json *status, const char *job, size_t *alive)
{
    const nsc_json *procs = nsc_json_get(status, "processes");
    size_t n = 0;
    *alive = 0;
    for (const nsc_json *p = nsc_json_first(procs); p; p = nsc_json_next(procs, p)) {
        const char *pj = nsc_json_str(nsc_json_get(p, "job")), *st = nsc_json_str(nsc_json_get(p, "state"));
        if (pj && strcmp(pj, job) == 0)
            n++, *alive += st && strcmp(st, "alive") == 0;
    }
    return n;
}

static job_result *result_of(nsc_rcmetrics *m, const char *name)
{
    for (size_t i = 0; i < m->njobs; i++)
        if (strcmp(m->jobs[i].name, name) == 0)
            return &m->jobs[i];
    if (nsc_grow(&m->jobs, m->njobs, &m->jobs_cap, sizeof *m->jobs, 16))
        return NULL;
    job_result *r = &m->jobs[m->njobs++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    return r;
}

/* How long after its last process stopped a job's share held by another
 * collector may still be on its way: its live state comes a live interval
 * later (the own live state learns a batch once it is stored). */
static uint64_t settle_ns(const nsc_collector *c)
{
    return 2 * c->cfg.live_interval_ms * 1000000ull;
}

static void forget(job_result *r)
{
    free(r->p);
    nsc_vposts_free(&r->posts);
    nsc_rc_carry_free(&r->carry);
}

/* The webhook's body for a verdict of job: {"job", "found" (UTC, the pass
 * that first found it), "problem" (as diagnose lists it)}; NULL without
 * memory. */
static char *verdict_body(const char *job, const nsc_problem *p, int64_t found_ns)
{
    char *text = NULL, found[NSC_UTC_MAX];
    size_t len = 0;
    nsc_utc_iso(found_ns, found, sizeof found);
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    fputs("{\"job\":", f);
    nsc_json_write_str(f, job);
    fprintf(f, ",\"found\":\"%s\",\"problem\":", found);
    nsc_diag_write_problem(p, f);
    fputs("}\n", f);
    if (fclose(f)) {
        free(text);
        return NULL;
    }
    return text;
}

typedef struct hook_post {
    nsc_webhook *hook;
    const char *job;
} hook_post;

static int post_verdict(void *arg, const nsc_problem *p, int64_t found_ns)
{
    hook_post *h = arg;
    char *body = verdict_body(h->job, p, found_ns);
    if (!body)
        return -1;
    nsc_webhook_post(h->hook, body);
    return 0;
}

static int64_t wall_now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Tell of r's problems: each new verdict (its kind and place, whatever the
 * seq) to the verdicts' fetches; to the webhook those vposts.h says this
 * collector posts now (when it announces the job). At every pass, the job
 * analysed or not: a done job's verdicts settle, or are taken over, too. */
static void announce(nsc_rcmetrics *m, job_result *r, uint64_t now)
{
    const nsc_problem **fresh = malloc((r->n + 1) * sizeof *fresh);
    size_t nfresh = 0;
    if (!fresh)
        return;
    int owner = m->hook && m->c->store.ops->announces(m->c->store.h, r->name);
    hook_post h = {.hook = m->hook, .job = r->name};
    /* out of memory: what it could not record is offered again at the next pass */
    (void)nsc_vposts_pass(&r->posts, r->p, r->n, now, wall_now_ns(), m->c->cfg.webhook_settle_ms * 1000000ull, owner,
                          fresh, &nfresh, post_verdict, &h);
    if (m->vf && nfresh)
        nsc_vfetch_verdicts(m->vf, r->name, fresh, nfresh, now);
    free(fresh);
}

int nsc_rcmetrics_changed(const nsc_rcm_view *then, const nsc_rcm_view *now)
{
    return then->procs != now->procs || !then->version_ok || !now->version_ok || then->version != now->version;
}

int nsc_rcmetrics_carried(const nsc_problem *p, uint64_t top, uint64_t window)
{
    static const int history[] = {NSC_SEV_MISMATCH, NSC_SEV_MISSING, NSC_SEV_STALL, NSC_SEV_IN_FLIGHT,
                                  NSC_SEV_SLOW_LINK, NSC_SEV_LATE};
    int from_history = 0;
    for (size_t i = 0; i < sizeof history / sizeof history[0]; i++)
        from_history |= p->severity == history[i];
    return from_history && window && top >= window && (p->seq == 0 || p->seq <= top - window);
}

/* This pass's problems (f) and, of the last pass's, those carried: a
 * verdict found again keeps the onset found first. NULL without memory. */
static nsc_problem *merge(const job_result *r, const nsc_findings *f, const nsc_json *status, uint64_t window,
                          size_t *n)
{
    nsc_problem *p = malloc((f->n + r->n + 1) * sizeof *p);
    if (!p)
        return NULL;
    memcpy(p, f->p, f->n * sizeof *p);
    *n = f->n;
    for (size_t i = 0; i < r->n; i++) {
        size_t j = 0;
        while (j < f->n && !nsc_vposts_same(&r->p[i], &p[j]))
            j++;
        if (j < f->n && r->p[i].began[0])
            memcpy(p[j].began, r->p[i].began, sizeof p[j].began);
        else if (j == f->n && *n < RCM_MAX_HELD &&
                 nsc_rcmetrics_carried(&r->p[i], nsc_status_comm_max_seq(status, r->name, r->p[i].comm), window))
            p[(*n)++] = r->p[i];
    }
    return p;
}

/* Analyse one job (unless done and unchanged): its problems replace the
 * last but those carried (merge). A job is done once none of its
 * processes has been alive for settle_ns. The store's version is read only
 * for a job none of whose processes is alive (running ones are analysed
 * anyway) and whose last stopped within rootcause_recheck_ms, before the
 * analysis: a share stored while it runs is seen at the next pass. Later
 * only a change of its processes has it analysed again. */
static void analyse(nsc_rcmetrics *m, const nsc_json *status, const char *name, nsc_findings *f)
{
    job_result *r = result_of(m, name);
    if (!r)
        return;
    r->seen = 1;
    size_t alive;
    nsc_rcm_view view = {.procs = job_procs(status, name, &alive)};
    uint64_t now = nsc_mono_ns();
    r->quiet_ns = alive ? 0 : r->quiet_ns ? r->quiet_ns : now;
    int recent = !alive && now - r->quiet_ns < m->c->cfg.rootcause_recheck_ms * 1000000ull;
    m->version_reads += recent;
    view.version_ok = recent && m->c->store.ops->version(m->c->store.h, name, &view.version) == 0;
    if (r->done && (recent ? !nsc_rcmetrics_changed(&r->seen_with, &view) : view.procs == r->seen_with.procs))
        return;
    nsc_diagapi_src ds;
    nsc_diagapi_src_init(&ds, m->c);
    memset(f, 0, sizeof *f);
    f->src = &ds.src;
    f->window = m->c->cfg.rootcause_window_seqs;
    f->carry = f->window ? &r->carry : NULL;
    f->p2p_lag_ns = m->c->cfg.rootcause_p2p_lag_ms * 1000000ull;
    int rc = nsc_diag_find(name, status, f);
    m->blocks += ds.blocks;
    nsc_diagapi_src_release(&ds);  /* ClickHouse: the job stays in the query cache */
    if (rc != NSC_DIAG_OK) {
        char job[NSC_LOGSAFE_ID];
        fprintf(stderr, "ncclscope-collector: root-cause metrics: job %s: %s\n", nsc_logsafe(job, sizeof job, name),
                ds.src.err);
        return;
    }
    size_t n;
    nsc_problem *p = merge(r, f, status, f->window, &n);
    if (!p)
        return;
    free(r->p);
    r->p = p, r->n = n, r->seen_with = view;
    r->done = r->quiet_ns && now - r->quiet_ns >= settle_ns(m->c);
}

/* Each job of this pass's verdicts told (announce), and when the first
 * verdict waiting settles: a pass is due then. */
static void tell(nsc_rcmetrics *m)
{
    uint64_t now = nsc_mono_ns(), settle = m->c->cfg.webhook_settle_ms * 1000000ull;
    m->settles_at = 0;
    for (size_t i = 0; i < m->njobs; i++) {
        job_result *r = &m->jobs[i];
        if (!r->seen)
            continue;
        announce(m, r, now);
        uint64_t at = m->hook ? nsc_vposts_due(&r->posts, settle) : 0;
        if (at && (!m->settles_at || at < m->settles_at))
            m->settles_at = at;
    }
}

/* Forget the jobs the live state no longer lists. */
static void drop_unseen(nsc_rcmetrics *m)
{
    size_t k = 0;
    for (size_t i = 0; i < m->njobs; i++) {
        if (m->jobs[i].seen) {
            m->jobs[i].seen = 0;
            m->jobs[k++] = m->jobs[i];
        } else {
            forget(&m->jobs[i]);
        }
    }
    m->njobs = k;
}

static void count_pair(pair_count *pc, size_t *n, size_t cap, const char *a, const char *b)
{
    size_t i = 0;
    while (i < *n && !(strcmp(pc[i].src, a) == 0 && strcmp(pc[i].dst, b) == 0))
        i++;
    if (i == *n) {
        if (*n == cap)
            return;
        memset(&pc[i], 0, sizeof pc[i]);
        snprintf(pc[i].src, sizeof pc[i].src, "%s", a);
        snprintf(pc[i].dst, sizeof pc[i].dst, "%s", b);
        (*n)++;
    }
    pc[i].jobs++;
}

static int by_jobs(const void *a, const void *b)
{
    const pair_count *x = a, *y = b;
    if (x->jobs != y->jobs)
        return x->jobs < y->jobs ? 1 : -1;
    int c = strcmp(x->src, y->src);
    return c ? c : strcmp(x->dst, y->dst);
}

/* Per host pair, the jobs with a slow link from one to the other. */
static size_t tally_pairs(const nsc_rcmetrics *m, pair_count *pc, size_t cap)
{
    size_t n = 0;
    for (size_t j = 0; j < m->njobs; j++)
        for (size_t i = 0; i < m->jobs[j].n; i++) {
            const nsc_problem *p = &m->jobs[j].p[i];
            int dup = 0;
            for (size_t k = 0; k < i && !dup; k++)
                dup = strcmp(m->jobs[j].p[k].kind, "slow_link") == 0 &&
                      strcmp(m->jobs[j].p[k].hosts[0], p->hosts[0]) == 0 &&
                      strcmp(m->jobs[j].p[k].hosts[1], p->hosts[1]) == 0;
            if (!dup && strcmp(p->kind, "slow_link") == 0 && p->hosts[0][0] && p->hosts[1][0])
                count_pair(pc, &n, cap, p->hosts[0], p->hosts[1]);
        }
    qsort(pc, n, sizeof *pc, by_jobs);
    return n;
}

static void write_hosts(struct evbuffer *b, const nsc_diag_hosts *t, size_t max)
{
    nsc_prom_head(b, "ncclscope_host_causes", "gauge",
                  "Problems diagnose placed at the host, by cause class, over the jobs the live state holds");
    for (size_t i = 0; i < t->n && i < max; i++)
        for (int k = 0; k < NSC_HOST_NCOLS; k++) {
            evbuffer_add_printf(b, "ncclscope_host_causes{host=\"");
            nsc_prom_label(b, t->h[i].host);
            evbuffer_add_printf(b, "\",cause=\"%s\"} %" PRIu64 "\n", nsc_diag_host_cols[k], t->h[i].n[k]);
        }
}

static void write_pairs(struct evbuffer *b, const pair_count *pc, size_t n, size_t max)
{
    nsc_prom_head(b, "ncclscope_link_slow_jobs", "gauge",
                  "Jobs in which diagnose found a slow link from src_host to dst_host");
    for (size_t i = 0; i < n && i < max; i++) {
        evbuffer_add_printf(b, "ncclscope_link_slow_jobs{src_host=\"");
        nsc_prom_label(b, pc[i].src);
        evbuffer_add_printf(b, "\",dst_host=\"");
        nsc_prom_label(b, pc[i].dst);
        evbuffer_add_printf(b, "\"} %" PRIu64 "\n", pc[i].jobs);
    }
}

/* Every host the status's processes name (so each has its zero series),
 * then each job's problems. */
static void tally_hosts(const nsc_rcmetrics *m, const nsc_json *status, nsc_diag_hosts *t)
{
    const nsc_json *procs = nsc_json_get(status, "processes");
    for (const nsc_json *p = nsc_json_first(procs); p; p = nsc_json_next(procs, p)) {
        const char *host = nsc_json_str(nsc_json_get(p, "host"));
        if (host)
            nsc_diag_hosts_add(t, host, -1);
    }
    for (size_t j = 0; j < m->njobs; j++)
        nsc_diag_hosts_count(t, m->jobs[j].p, m->jobs[j].n);
    nsc_diag_hosts_sort(t);
}

static struct evbuffer *render(const nsc_rcmetrics *m, const nsc_json *status, double took_s)
{
    size_t max = m->c->cfg.metrics_max_hosts;
    nsc_diag_hosts t = {0};
    pair_count *pc = calloc(max + 1, sizeof *pc);
    int have = pc && nsc_diag_hosts_new(&t) == NSC_DIAG_OK;
    struct evbuffer *b = have ? evbuffer_new() : NULL;
    if (b) {
        tally_hosts(m, status, &t);
        write_hosts(b, &t, max);
        write_pairs(b, pc, tally_pairs(m, pc, max), max);
        nsc_prom_u64(b, "ncclscope_collector_metrics_hosts_omitted", "gauge",
                     "Hosts left out of ncclscope_host_causes (beyond metrics_max_hosts)", t.n > max ? t.n - max : 0);
        nsc_prom_u64(b, "ncclscope_collector_rootcause_passes_total", "counter", "Root-cause passes run",
                     m->passes);
        nsc_prom_u64(b, "ncclscope_collector_rootcause_passes_triggered_total", "counter",
                     "Root-cause passes run before rootcause_interval_ms for new ledger records", m->triggered);
        nsc_prom_u64(b, "ncclscope_collector_rootcause_jobs", "gauge",
                     "Jobs whose diagnosis the root-cause metrics hold", m->njobs);
        nsc_prom_u64(b, "ncclscope_collector_rootcause_version_reads_total", "counter",
                     "Store versions read for jobs that ended within rootcause_recheck_ms", m->version_reads);
        nsc_prom_u64(b, "ncclscope_collector_rootcause_blocks_decoded_total", "counter",
                     "Raw event blocks the root-cause passes decoded", m->blocks);
        nsc_prom_head(b, "ncclscope_collector_rootcause_cpu_seconds_total", "counter",
                      "CPU time the root-cause passes took");
        evbuffer_add_printf(b, "ncclscope_collector_rootcause_cpu_seconds_total %.6f\n", (double)m->cpu_ns / 1e9);
        nsc_prom_head(b, "ncclscope_collector_rootcause_pass_seconds", "gauge",
                      "How long the last root-cause pass took");
        evbuffer_add_printf(b, "ncclscope_collector_rootcause_pass_seconds %.3f\n", took_s);
    }
    nsc_diag_hosts_free(&t);
    free(pc);
    return b;
}

static void pass(nsc_rcmetrics *m, nsc_findings *f)
{
    uint64_t t0 = nsc_mono_ns(), cpu0 = nsc_thread_cpu_ns();
    nsc_diagapi_src ds;
    nsc_doc st;
    nsc_diagapi_src_init(&ds, m->c);
    int rc = nsc_diag_fetch_doc(&ds.src, "status", "", &st);
    nsc_diagapi_src_release(&ds);
    if (rc != NSC_DIAG_OK)
        return;
    const nsc_json *status = nsc_json_root(&st.doc), *jobs = nsc_json_get(status, "jobs");
    for (const nsc_json *j = nsc_json_first(jobs); j && !atomic_load(&m->c->stop); j = nsc_json_next(jobs, j)) {
        const char *name = nsc_json_str(nsc_json_get(j, "job"));
        if (name)
            analyse(m, status, name, f);
    }
    tell(m);
    drop_unseen(m);
    m->passes++;
    m->cpu_ns += nsc_thread_cpu_ns() - cpu0;
    struct evbuffer *text = render(m, status, (double)(nsc_mono_ns() - t0) / 1e9);
    nsc_doc_free(&st);
    if (!text)
        return;
    pthread_mutex_lock(&m->mu);
    if (m->text)
        evbuffer_free(m->text);
    m->text = text;
    pthread_mutex_unlock(&m->mu);
}

/* 1 when a pass is due: every rootcause_interval_ms, and sooner (not before
 * rootcause_trigger_ms) once ledger records were stored since the last: a
 * fault's evidence arrives as ledger records, and a verdict waiting for the
 * next period would be late by up to a whole one. Sooner too once a verdict
 * held has settled (webhook_settle_ms): a pass must find it again to post it. */
static int due(nsc_rcmetrics *m, uint64_t waited)
{
    const nsc_coll_cfg *cfg = &m->c->cfg;
    uint64_t stored = atomic_load_explicit(&m->c->stats.ledger_stored, memory_order_relaxed);
    int early = cfg->rootcause_trigger_ms && waited >= cfg->rootcause_trigger_ms && stored != m->ledger_seen;
    if (waited < cfg->rootcause_interval_ms && !early)
        return m->settles_at && nsc_mono_ns() >= m->settles_at;
    m->triggered += waited < cfg->rootcause_interval_ms;
    m->ledger_seen = stored;
    return 1;
}

static void *run(void *arg)
{
    nsc_rcmetrics *m = arg;
    nsc_findings *f = malloc(sizeof *f);
    uint64_t waited = m->c->cfg.rootcause_interval_ms;  /* the first pass at once */
    while (f && !atomic_load(&m->c->stop)) {
        if (due(m, waited)) {
            pass(m, f);
            waited = 0;
        }
        if (m->vf)
            nsc_vfetch_run(m->vf, nsc_mono_ns());
        struct timespec ts = {0, RCM_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
        waited += RCM_POLL_MS;
    }
    free(f);
    return NULL;
}

int nsc_rcmetrics_start(nsc_collector *c, nsc_rcmetrics **out)
{
    *out = NULL;
    if (c->cfg.rootcause_interval_ms == 0)
        return 0;
    nsc_rcmetrics *m = calloc(1, sizeof *m);
    if (!m)
        return -1;
    m->c = c;
    if (nsc_webhook_start(&c->cfg, &m->hook)) {
        free(m);
        return -1;
    }
    pthread_mutex_init(&m->mu, NULL);
    int on_demand = strcmp(c->cfg.detail, "on-demand") == 0;
    if ((on_demand && !(m->vf = nsc_vfetch_new(c))) || pthread_create(&m->thread, NULL, run, m)) {
        nsc_vfetch_free(m->vf);
        pthread_mutex_destroy(&m->mu);
        nsc_webhook_stop(m->hook);
        free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void nsc_rcmetrics_render(nsc_rcmetrics *m, struct evbuffer *b)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (m->text)
        evbuffer_add(b, evbuffer_pullup(m->text, -1), evbuffer_get_length(m->text));
    pthread_mutex_unlock(&m->mu);
    nsc_webhook_render(m->hook, b);
    if (m->vf)
        nsc_vfetch_render(m->vf, b);
}

void nsc_rcmetrics_join(nsc_rcmetrics *m)
{
    if (!m)
        return;
    pthread_join(m->thread, NULL);
    nsc_webhook_stop(m->hook);
    for (size_t i = 0; i < m->njobs; i++)
        forget(&m->jobs[i]);
    free(m->jobs);
    nsc_vfetch_free(m->vf);
    if (m->text)
        evbuffer_free(m->text);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
