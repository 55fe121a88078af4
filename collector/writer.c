/* writer.c: group commit, acknowledgements (see writer.h). */
#include "writer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "clocks.h"
#include "dedupe.h"
#include "item.h"
#include "grow.h"
#include "json.h"
#include "logsafe.h"
#include "procmap.h"

struct nsc_writer {
    nsc_collector *c;
    void *pair;
    pthread_t thread;
    nsc_procmap *procs;     /* the processes of the batches taken: places ledger-only batches */
    nsc_item **held;        /* items of the open transaction (acked after commit) */
    size_t nheld, held_cap;
    nsc_item **inserting;   /* items of the commit in flight (NSC_CSTORE_INFLIGHT) */
    size_t ninserting, inserting_cap;
    uint64_t insert_t0;     /* when that commit was started */
    int insert_open;        /* one is in flight */
    int txn_open;
    uint64_t txn_open_ns;   /* when the group opened */
    uint64_t next_persist_ns;
    uint64_t models_held;       /* clock models put into the open group */
    uint64_t models_inserting;  /* those of the commit in flight */
    uint64_t next_gap_log_ns;  /* rate limit of the gap-table-full message */
    uint64_t next_limit_log_ns;   /* rate limit of the live state's refusals */
    uint64_t next_hosts_log_ns;   /* rate limit of the clock hosts' refusals */
};

int nsc_writer_log_due(uint64_t *next_ns)
{
    uint64_t now = nsc_mono_ns();
    if (now < *next_ns)
        return 0;
    *next_ns = now + 10000000000ull;
    return 1;
}

void nsc_writer_log_store(const char *what, int rc)
{
    fprintf(stderr, "ncclscope-collector: %s: %s\n", what, nsc_store_strerror(rc));
}

static int hold(nsc_writer *w, nsc_item *it)
{
    if (nsc_grow(&w->held, w->nheld, &w->held_cap, sizeof *w->held, 256))
        return -1;
    w->held[w->nheld++] = it;
    return 0;
}

static int ensure_txn(nsc_writer *w)
{
    if (w->txn_open)
        return 0;
    const nsc_cstore *s = &w->c->store;
    uint64_t now = nsc_mono_ns();
    int rc = s->ops->begin(s->h, now);
    if (rc)
        nsc_writer_log_store("begin", rc);
    w->txn_open = rc == 0;
    w->txn_open_ns = now;
    return rc;
}

/* One line about what an agent (and a host, or NULL) made the collector
 * refuse, both escaped; at most one every 10 s per *next_ns. */
static void log_peer(uint64_t *next_ns, const char *agent, const char *host, const char *what)
{
    if (!nsc_writer_log_due(next_ns))
        return;
    flockfile(stderr);
    fputs("ncclscope-collector: agent ", stderr);
    nsc_json_write_str(stderr, agent);
    if (host) {
        fputs(", host ", stderr);
        nsc_json_write_str(stderr, host);
    }
    fprintf(stderr, ": %s\n", what);
    funlockfile(stderr);
}

/* A placed ledger batch's records into the live state, their times turned
 * by their host's clock model (none yet: as they are, as the queries take
 * them). */
static int feed_ledger(nsc_collector *c, const nsc_item *it, const nsc_store_ledger *sl)
{
    uint64_t off = 0, err = 0;
    pthread_mutex_lock(&c->clock_mu);
    if (nsc_clocks_offset(c->clocks, sl->proc->host, it->recv_ns, &off, &err))
        off = err = 0;
    pthread_mutex_unlock(&c->clock_mu);
    pthread_mutex_lock(&c->live_mu);
    int rc = nsc_live_ledger(c->live, it->a2c.agent, sl->proc, sl->batch, off, err, it->recv_ns);
    pthread_mutex_unlock(&c->live_mu);
    return rc;
}

/* The live state learns what a committed batch says (a batch counted once:
 * only after its commit, and a duplicate never): its sections' definitions
 * and events, its processes' life, then its ledger records. */
static void feed_live(nsc_writer *w, const nsc_item *it)
{
    nsc_collector *c = w->c;
    int rc, refused = 0;
    pthread_mutex_lock(&c->live_mu);
    rc = nsc_live_agent_seen(c->live, it->a2c.agent, it->a2c.host, it->recv_ns);
    for (uint32_t i = 0; rc >= 0 && i < it->a2c.nsections; i++)
        refused = (rc = nsc_live_section(c->live, it->a2c.agent, &it->secs[i], it->recv_ns)) > 0 ? rc : refused;
    for (uint32_t i = 0; rc >= 0 && i < it->a2c.nlife; i++)
        refused = (rc = nsc_live_life(c->live, it->a2c.agent, it->a2c.life[i].host, &it->a2c.life[i], it->recv_ns)) > 0
                      ? rc : refused;
    pthread_mutex_unlock(&c->live_mu);
    for (uint32_t i = 0; rc >= 0 && i < it->nsl; i++)
        if (it->sl[i].proc)
            refused = (rc = feed_ledger(c, it, &it->sl[i])) > 0 ? rc : refused;
    if (rc < 0)
        fprintf(stderr, "ncclscope-collector: live state: out of memory\n");
    else if (refused) {
        char what[160];
        snprintf(what, sizeof what, "a batch reached max_%s: stored, what is beyond the limit not tracked live",
                 nsc_live_limit_name(refused - 1));
        log_peer(&w->next_limit_log_ns, it->a2c.agent, NULL, what);
    }
}

/* A batch that would open one gap too many in its agent's committed
 * sequences: neither stored nor acknowledged, so the agent sends it again
 * later, when the gaps before it may have been filled. */
static void refuse_gap(nsc_writer *w, nsc_item *it)
{
    uint64_t n = atomic_fetch_add_explicit(&w->c->stats.gap_refusals, 1, memory_order_relaxed) + 1;
    char id[NSC_LOGSAFE_ID];
    if (nsc_writer_log_due(&w->next_gap_log_ns))
        fprintf(stderr,
                "ncclscope-collector: agent %s: batch %" PRIu64 " refused, %d gaps in its "
                "committed batches already (%" PRIu64 " refusals so far)\n",
                nsc_logsafe(id, sizeof id, it->a2c.agent), it->a2c.seq, NSC_DEDUPE_MAX_RANGES, n);
    nsc_item_free(it);
}

/* A batch committed: the counters learn it. */
static void count_taken(nsc_writer *w, const nsc_item *it)
{
    nsc_stats *s = &w->c->stats;
    uint64_t ev = 0, stt = 0, cp = 0;
    for (uint32_t i = 0; i < it->a2c.nsections; i++) {
        ev += it->sb[i].nevents;
        stt += it->sb[i].nstates;
        cp += it->sb[i].ncompletions;
    }
    atomic_fetch_add_explicit(&s->batches, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sections, it->a2c.nsections, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->events, ev, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->states, stt, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->completions, cp, memory_order_relaxed);
    nsc_store_ledger_counts lc = {0, 0, 0, it->ledger_unplaced};
    for (uint32_t i = 0; i < it->nsl; i++) {
        lc.stored += it->sl[i].counts.stored;
        lc.replaced += it->sl[i].counts.replaced;
        lc.stale += it->sl[i].counts.stale;
        lc.rejected += it->sl[i].counts.rejected;
    }
    atomic_fetch_add_explicit(&s->ledger_stored, lc.stored, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->ledger_replaced, lc.replaced, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->ledger_stale, lc.stale, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->ledger_rejected, lc.rejected, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->ledger_bad_batches, it->ledger_bad, memory_order_relaxed);
}

/* Store lookups one batch may cost (each a scan of the store's processes):
 * what a batch of unknown pids can make the writer do is bounded. */
#define PLACE_LOOKUPS 8

/* Process pid of the batch's host as the store holds it (a collector
 * restarted since the agent's last section of it), learnt: 0, or -1. */
static int stored_proc(nsc_writer *w, const nsc_a2c_batch *a, uint32_t pid, nsc_proc *out)
{
    const nsc_cstore *s = &w->c->store;
    int rc = s->ops->find_proc(s->h, a->host, pid, out);
    if (rc == 0)
        nsc_procmap_put(w->procs, a->agent, out);
    return rc ? -1 : 0;
}

/* The processes of the batch learnt; its ledger batches whose process has
 * no section in it placed with what the agent's earlier batches said, else
 * with what the store holds of the pid on the batch's host, or counted
 * (ledger_unplaced) and left out. */
static void place_ledgers(nsc_writer *w, nsc_item *it)
{
    const nsc_a2c_batch *a = &it->a2c;
    for (uint32_t i = 0; i < a->nsections; i++)
        nsc_procmap_put(w->procs, a->agent, &it->secs[i].hdr.proc);
    for (uint32_t i = 0; i < a->nlife; i++) {
        nsc_proc p = {.pid = a->life[i].pid, .local_rank = -1, .gpu = -1};
        snprintf(p.job, sizeof p.job, "%s", a->life[i].job);
        snprintf(p.host, sizeof p.host, "%s", a->life[i].host);
        nsc_proc known;
        if (nsc_procmap_get(w->procs, a->agent, p.pid, &known) != 0)  /* a section's says more */
            nsc_procmap_put(w->procs, a->agent, &p);
    }
    unsigned looked = 0;
    for (uint32_t i = 0; i < it->nsl; i++) {
        nsc_store_ledger *l = &it->sl[i];
        if (!l->proc && (nsc_procmap_get(w->procs, a->agent, l->batch->pid, &it->lproc[i]) == 0 ||
                         (looked++ < PLACE_LOOKUPS && stored_proc(w, a, l->batch->pid, &it->lproc[i]) == 0)))
            l->proc = &it->lproc[i];
        if (!l->proc)
            it->ledger_unplaced += l->batch->nrecs;
    }
}

/* Put a batch the store admits as new; a duplicate is held for its ack
 * again. A batch refused for its gaps, or while the store does not know
 * which batches it holds (neither stored nor acknowledged: the agent sends
 * it again), is freed here and 0 returned. */
static int take_batch(nsc_writer *w, nsc_item *it)
{
    const nsc_cstore *s = &w->c->store;
    nsc_stats *st = &w->c->stats;
    nsc_cstore_admit adm = s->ops->admit(s->h, &it->a2c);
    if (adm == NSC_CSTORE_UNKNOWN) {
        atomic_fetch_add_explicit(&st->unknown_refusals, 1, memory_order_relaxed);
        nsc_item_free(it);
        return 0;
    }
    if (adm == NSC_CSTORE_GAP) {
        refuse_gap(w, it);
        return 0;
    }
    int rc = ensure_txn(w);
    if (rc)
        return rc;
    if (adm == NSC_CSTORE_DUPLICATE) {
        atomic_fetch_add_explicit(&st->duplicates, 1, memory_order_relaxed);
        return hold(w, it) ? NSC_STORE_ENOMEM : 0;
    }
    place_ledgers(w, it);
    if ((rc = s->ops->put_batch(s->h, it)) || hold(w, it))
        return rc ? rc : NSC_STORE_ENOMEM;
    it->stored = 1;
    return 0;
}

static void send_ack(nsc_writer *w, nsc_item *it)
{
    nsc_item_release_credit(it);
    nsc_a2c_ack ack = {.seq = it->a2c.seq, .credit = (uint32_t)w->c->cfg.credit};
    uint8_t buf[NSC_A2C_SMALL_MAX];
    snprintf(ack.agent, sizeof ack.agent, "%s", it->a2c.agent);
    size_t n = nsc_a2c_encode_ack(&ack, buf);
    if (zmq_send(w->pair, it->ident, it->ident_len, ZMQ_SNDMORE) >= 0 &&
        zmq_send(w->pair, buf, n, 0) >= 0)
        atomic_fetch_add_explicit(&w->c->stats.acks, 1, memory_order_relaxed);
}

static void release(nsc_item **items, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        nsc_item_free(items[i]);
    *n = 0;
}

static void release_held(nsc_writer *w)
{
    release(w->held, &w->nheld);
}

/* After the store said rc about the n items' rows (stored since t0):
 * acknowledge their batches if rc is 0, else none (the agents send them
 * again). */
static void acknowledge_items(nsc_writer *w, nsc_item **items, size_t *n, int rc, uint64_t t0)
{
    nsc_collector *c = w->c;
    if (rc == 0) {
        nsc_stats_commit(&c->stats, nsc_mono_ns() - t0, *n);
        for (size_t i = 0; i < *n; i++) {
            if (items[i]->stored) {  /* the counters and the live state say what is queryable */
                count_taken(w, items[i]);
                if (items[i]->detail)  /* old detail fetched: the live state has its ledger already */
                    atomic_fetch_add_explicit(&c->stats.detail_batches, 1, memory_order_relaxed);
                else
                    feed_live(w, items[i]);
            }
            if (!items[i]->detail)  /* an ack names an agent batch: detail has none */
                send_ack(w, items[i]);
        }
    } else {
        atomic_fetch_add_explicit(&c->stats.commit_failures, 1, memory_order_relaxed);
    }
    release(items, n);
}

/* The rank progress always, the clock models when due, into the open
 * group; ended jobs evicted from the live state on the same schedule. The
 * live state's wall clock is the one recorded with them. */
static int put_state(nsc_writer *w, uint64_t t0)
{
    nsc_collector *c = w->c;
    const nsc_cstore *s = &c->store;
    int64_t off;
    int rc = s->ops->wall(s->h, t0, &off), wall = rc == 0;
    if (rc > 0)  /* none known yet */
        rc = 0;
    pthread_mutex_lock(&c->live_mu);
    if (wall)
        nsc_live_set_wall(c->live, off);
    if (!rc)
        rc = nsc_live_take_progress(c->live, s->ops->put_progress, s->h);
    if (!rc && t0 >= w->next_persist_ns)  /* after their progress was taken */
        nsc_live_evict(c->live, t0);
    pthread_mutex_unlock(&c->live_mu);
    if (!rc && t0 >= w->next_persist_ns) {
        pthread_mutex_lock(&c->clock_mu);
        rc = nsc_clocks_put_dirty(c->clocks, s->ops->put_clock, s->h, &w->models_held);
        pthread_mutex_unlock(&c->clock_mu);
        w->next_persist_ns = t0 + c->cfg.clock_persist_s * 1000000000ull;
    }
    return rc;
}

/* A group's clock models, counted once its commit stored them: a reader
 * that sees the count unchanged saw no other models in between. */
static void count_models(nsc_writer *w, uint64_t *n, int rc)
{
    if (rc == 0)
        atomic_fetch_add_explicit(&w->c->stats.models_stored, *n, memory_order_relaxed);
    *n = 0;
}

/* The commit in flight, if any, waited for; its batches acknowledged when
 * the store took all of their rows (it logs what failed). */
static void finish_insert(nsc_writer *w)
{
    if (!w->insert_open)
        return;
    const nsc_cstore *s = &w->c->store;
    w->insert_open = 0;
    int rc = s->ops->commit_wait(s->h);
    count_models(w, &w->models_inserting, rc);
    acknowledge_items(w, w->inserting, &w->ninserting, rc, w->insert_t0);
}

/* Commit the open group, the group's state with it; acknowledge its batches
 * only once that worked (nothing acknowledged otherwise: the agents send
 * again). A commit that stays in flight is acknowledged at its end while
 * the writer takes the next batches; the one before is waited for first, so
 * the live state learns its batches and their progress rides along now. */
static int commit(nsc_writer *w)
{
    if (!w->txn_open)
        return 0;
    const nsc_cstore *s = &w->c->store;
    uint64_t t0 = nsc_mono_ns();
    finish_insert(w);
    int rc = put_state(w, t0);
    if (rc) {
        nsc_writer_log_store("the group's state (nothing acknowledged)", rc);
        s->ops->abort(s->h);
    } else {
        rc = s->ops->commit(s->h);
    }
    w->txn_open = 0;
    if (rc != NSC_CSTORE_INFLIGHT) {
        count_models(w, &w->models_held, rc);
        acknowledge_items(w, w->held, &w->nheld, rc, t0);
        return rc;
    }
    w->models_inserting = w->models_held, w->models_held = 0;
    nsc_item **held = w->held;
    size_t cap = w->held_cap;
    w->held = w->inserting, w->held_cap = w->inserting_cap;
    w->inserting = held, w->inserting_cap = cap;
    w->ninserting = w->nheld, w->nheld = 0;
    w->insert_t0 = t0;
    w->insert_open = 1;
    return 0;
}

static void take_sample(nsc_writer *w, nsc_item *it)
{
    nsc_collector *c = w->c;
    pthread_mutex_lock(&c->clock_mu);
    int rc = nsc_clocks_add(c->clocks, &it->sample);
    pthread_mutex_unlock(&c->clock_mu);
    pthread_mutex_lock(&c->live_mu);
    nsc_live_agent_seen(c->live, it->sample.agent, it->sample.host, it->recv_ns);
    pthread_mutex_unlock(&c->live_mu);
    int hosts = rc == NSC_CLOCKS_EFULL || rc == NSC_CLOCKS_EAGENT;
    if (hosts)
        log_peer(&w->next_hosts_log_ns, it->sample.agent, it->sample.host,
                 rc == NSC_CLOCKS_EFULL ? "clock sample refused: max_hosts hosts have clock models"
                                        : "clock sample refused: the agent's samples made max_hosts_per_agent models");
    if (rc)
        nsc_stats_reject(&c->stats, it->sample.agent, hosts ? NSC_REJ_HOSTS : NSC_REJ_CLOCK);
    else
        atomic_fetch_add_explicit(&c->stats.samples, 1, memory_order_relaxed);
    nsc_item_free(it);
}

/* Clock models and retention, when no transaction is open. */
static void housekeeping(nsc_writer *w)
{
    nsc_collector *c = w->c;
    uint64_t now = nsc_mono_ns();
    if (now < w->next_persist_ns)
        return;
    if (ensure_txn(w) == 0)
        commit(w);
    if (c->cfg.retain_mb || c->cfg.retain_age_s) {
        uint64_t deleted = 0;
        int rc = c->store.ops->retain(c->store.h, now, &deleted);
        if (rc)
            nsc_writer_log_store("retention", rc);
        atomic_fetch_add_explicit(&c->stats.retained_blocks, deleted, memory_order_relaxed);
    }
}

/* One message from the ingest thread: an item pointer, NULL to stop. */
static int receive(nsc_writer *w, nsc_item **it)
{
    int n = zmq_recv(w->pair, it, sizeof *it, 0);
    if (n != (int)sizeof *it)
        return -1;
    atomic_fetch_sub_explicit(&w->c->stats.queue_depth, 1, memory_order_relaxed);
    return 0;
}

/* How long to wait for the next item: as long as the store lets the open
 * group gather batches (cstore.h). */
static long wait_ms(const nsc_writer *w)
{
    const nsc_cstore *s = &w->c->store;
    return w->txn_open ? s->ops->gather_ms(s->h, w->txn_open_ns, nsc_mono_ns()) : 200;
}

/* Commit now: the group is full, or the store says it must go. */
static int group_full(const nsc_writer *w)
{
    const nsc_cstore *s = &w->c->store;
    return w->nheld >= w->c->cfg.group_max || s->ops->due(s->h, w->txn_open_ns, nsc_mono_ns());
}

/* A put failed: drop the open group and everything held (no ack). */
static void abort_txn(nsc_writer *w)
{
    w->txn_open = 0;
    w->models_held = 0;
    release_held(w);
    w->c->store.ops->abort(w->c->store.h);
}

static void *run(void *arg)
{
    nsc_writer *w = arg;
    int commit_fd = w->c->store.ops->commit_fd(w->c->store.h);
    zmq_pollitem_t pi[2] = {{w->pair, 0, ZMQ_POLLIN, 0}, {NULL, commit_fd, ZMQ_POLLIN, 0}};
    for (;;) {
        int ready = zmq_poll(pi, commit_fd >= 0 ? 2 : 1, wait_ms(w));
        if (ready > 0 && (pi[1].revents & ZMQ_POLLIN)) {
            finish_insert(w);  /* the commit in flight ended */
            if (!(pi[0].revents & ZMQ_POLLIN))
                continue;
        }
        if (ready <= 0) {
            if (w->txn_open)
                commit(w);
            else
                housekeeping(w);
            continue;
        }
        nsc_item *it;
        if (receive(w, &it))
            continue;
        if (!it)
            break;
        if (it->kind == NSC_ITEM_SAMPLE) {
            take_sample(w, it);
        } else if (take_batch(w, it)) {
            nsc_item_free(it);  /* not held: no ack, the agent sends it again */
            abort_txn(w);
        } else if (group_full(w)) {
            commit(w);
        }
    }
    /* the clock models learnt since the last persist are stored too */
    w->next_persist_ns = 0;
    if (ensure_txn(w) == 0)
        commit(w);
    finish_insert(w);
    /* the live state learnt the last batches at their commit (insert): their
     * ranks' progress goes in one more */
    if (ensure_txn(w) == 0)
        commit(w);
    finish_insert(w);
    zmq_send(w->pair, "done", 4, 0);
    return NULL;
}

int nsc_writer_start(nsc_collector *c, nsc_writer **out)
{
    nsc_writer *w = calloc(1, sizeof *w);
    if (!w)
        return -1;
    w->c = c;
    int linger = 0, hwm = 0;  /* unbounded: the agents' credit bounds the queue */
    if (!(w->procs = nsc_procmap_new()) || c->store.ops->load_clocks(c->store.h, c->clocks) ||
        !(w->pair = zmq_socket(c->zctx, ZMQ_PAIR)) ||
        zmq_setsockopt(w->pair, ZMQ_LINGER, &linger, sizeof linger) ||
        zmq_setsockopt(w->pair, ZMQ_SNDHWM, &hwm, sizeof hwm) ||
        zmq_setsockopt(w->pair, ZMQ_RCVHWM, &hwm, sizeof hwm) ||
        zmq_bind(w->pair, NSC_WRITER_ENDPOINT) ||
        pthread_create(&w->thread, NULL, run, w)) {
        fprintf(stderr, "ncclscope-collector: writer: cannot start\n");
        if (w->pair)
            zmq_close(w->pair);
        nsc_procmap_free(w->procs);
        free(w);
        return -1;
    }
    *out = w;
    return 0;
}

void nsc_writer_stop_alone(nsc_collector *c)
{
    void *pair = zmq_socket(c->zctx, ZMQ_PAIR);
    nsc_item *none = NULL;
    char done[4];
    if (pair && zmq_connect(pair, NSC_WRITER_ENDPOINT) == 0 &&
        zmq_send(pair, &none, sizeof none, 0) == (int)sizeof none)
        zmq_recv(pair, done, sizeof done, 0);
    if (pair)
        zmq_close(pair);
}

void nsc_writer_join(nsc_writer *w)
{
    pthread_join(w->thread, NULL);
    zmq_close(w->pair);
    nsc_procmap_free(w->procs);
    free(w->held), free(w->inserting);
    free(w);
}
