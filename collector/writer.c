/* writer.c: dedupe, group commit, acknowledgements (see writer.h). */
#include "writer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "chstore.h"
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
    nsc_dedupe *dedupe;
    nsc_procmap *procs;     /* the processes of the batches taken: places ledger-only batches */
    nsc_item **held;        /* items of the open transaction (acked after commit) */
    size_t nheld, held_cap;
    nsc_item **inserting;   /* clickhouse: items of the insert in flight */
    size_t ninserting, inserting_cap;
    uint64_t insert_t0;     /* when that insert was started */
    int insert_open;        /* one is in flight */
    int txn_open;
    uint64_t txn_open_ns;   /* clickhouse: when the first held batch came */
    uint64_t next_persist_ns;
    uint64_t next_gap_log_ns;  /* rate limit of the gap-table-full message */
    uint64_t next_reload_log_ns;  /* rate limit of the dedupe-reload message */
    uint64_t next_limit_log_ns;   /* rate limit of the live state's refusals */
    uint64_t next_hosts_log_ns;   /* rate limit of the clock hosts' refusals */
};

/* 1 at most every 10 s per *next_ns: a message repeated per batch would flood the log. */
static int log_due(uint64_t *next_ns)
{
    uint64_t now = nsc_mono_ns();
    if (now < *next_ns)
        return 0;
    *next_ns = now + 10000000000ull;
    return 1;
}

static void log_store(const char *what, int rc)
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
    if (w->c->ch) {  /* the "transaction" is the rows waiting for their insert */
        w->txn_open = 1;
        w->txn_open_ns = nsc_mono_ns();
        return 0;
    }
    int rc = nsc_store_begin(w->c->store, nsc_mono_ns());
    if (rc)
        log_store("begin", rc);
    w->txn_open = rc == 0;
    return rc;
}

/* The store's view of the batch's i-th lifecycle record. */
static void life_of(const nsc_item *it, uint32_t i, nsc_store_life *sl)
{
    const nsc_a2c_life *l = &it->a2c.life[i];
    *sl = (nsc_store_life){.pid = l->pid, .event = l->event, .reason = l->reason, .ts_ns = l->ts_ns,
                           .ref_ns = it->recv_ns, .last_batch_seq = l->last_batch_seq};
    snprintf(sl->host, sizeof sl->host, "%s", l->host);
    snprintf(sl->job, sizeof sl->job, "%s", l->job);
    snprintf(sl->agent, sizeof sl->agent, "%s", it->a2c.agent);
}

static int put_life(nsc_writer *w, const nsc_item *it)
{
    for (uint32_t i = 0; i < it->a2c.nlife; i++) {
        nsc_store_life sl;
        life_of(it, i, &sl);
        int rc = nsc_store_put_life(w->c->store, &sl);
        if (rc)
            return rc;
    }
    return 0;
}

/* One line about what an agent (and a host, or NULL) made the collector
 * refuse, both escaped; at most one every 10 s per *next_ns. */
static void log_peer(uint64_t *next_ns, const char *agent, const char *host, const char *what)
{
    if (!log_due(next_ns))
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

/* The live state learns what a committed batch says (a batch counted once:
 * only after its commit, and a duplicate never). */
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
    if (rc < 0)
        fprintf(stderr, "ncclscope-collector: live state: out of memory\n");
    else if (refused) {
        char what[160];
        snprintf(what, sizeof what, "a batch reached max_%s: stored, what is beyond the limit not tracked live",
                 nsc_live_limit_name(refused - 1));
        log_peer(&w->next_limit_log_ns, it->a2c.agent, NULL, what);
    }
}

static int put_progress(void *arg, const nsc_store_progress *p)
{
    return nsc_store_put_progress(arg, p);
}

/* A batch that would open one gap too many in its agent's committed
 * sequences: neither stored nor acknowledged, so the agent sends it again
 * later, when the gaps before it may have been filled. */
static void refuse_gap(nsc_writer *w, nsc_item *it)
{
    uint64_t n = atomic_fetch_add_explicit(&w->c->stats.gap_refusals, 1, memory_order_relaxed) + 1;
    char id[NSC_LOGSAFE_ID];
    if (log_due(&w->next_gap_log_ns))
        fprintf(stderr,
                "ncclscope-collector: agent %s: batch %" PRIu64 " refused, %d gaps in its "
                "committed batches already (%" PRIu64 " refusals so far)\n",
                nsc_logsafe(id, sizeof id, it->a2c.agent), it->a2c.seq, NSC_DEDUPE_MAX_RANGES, n);
    nsc_item_free(it);
}

/* Replace the dedupe state with what the store committed. When that fails the
 * writer does not know which batches are stored: take_batch then takes none
 * (neither stored nor acknowledged, the agents send them again) until a
 * reload works, so no batch is ever stored twice. */
static int reload_dedupe(nsc_writer *w)
{
    int rc = nsc_dedupe_load(w->dedupe, w->c->store);
    if (rc) {
        atomic_fetch_add_explicit(&w->c->stats.dedupe_reload_failures, 1, memory_order_relaxed);
        if (log_due(&w->next_reload_log_ns))
            log_store("reloading the committed batch sequences (batches refused until it works)", rc);
    }
    return rc;
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
    nsc_store_reader *rd;
    if (w->c->ch || nsc_store_read_begin(w->c->store, &rd))
        return -1;
    int rc = nsc_store_find_proc(rd, a->host, pid, out);
    nsc_store_read_end(rd);
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

/* Put a batch unless it is committed already; either way it is held for its
 * ack. A batch refused for its gaps, or while the committed sequences are not
 * known, is freed here (no ack) and 0 returned. */
static int take_batch(nsc_writer *w, nsc_item *it)
{
    nsc_stats *s = &w->c->stats;
    if (!nsc_dedupe_known(w->dedupe) && (w->txn_open || reload_dedupe(w))) {
        atomic_fetch_add_explicit(&s->unknown_refusals, 1, memory_order_relaxed);
        nsc_item_free(it);
        return 0;
    }
    int rc = ensure_txn(w);
    if (rc)
        return rc;
    if (nsc_dedupe_has(w->dedupe, it->a2c.agent, it->a2c.epoch, it->a2c.seq)) {
        atomic_fetch_add_explicit(&s->duplicates, 1, memory_order_relaxed);
        return hold(w, it) ? NSC_STORE_ENOMEM : 0;
    }
    if (nsc_dedupe_room(w->dedupe, it->a2c.agent, it->a2c.epoch, it->a2c.seq)) {
        refuse_gap(w, it);
        return 0;
    }
    for (uint32_t i = 0; !rc && i < it->a2c.nsections; i++)
        rc = nsc_store_put(w->c->store, &it->sb[i]);
    place_ledgers(w, it);
    for (uint32_t i = 0; !rc && i < it->nsl; i++)  /* in the batch's transaction: stored exactly once with it */
        if (it->sl[i].proc)
            rc = nsc_store_put_ledger(w->c->store, &it->sl[i]);
    if (rc || (rc = put_life(w, it)) || nsc_dedupe_mark(w->dedupe, it->a2c.agent, it->a2c.epoch, it->a2c.seq) ||
        hold(w, it))
        return rc ? rc : NSC_STORE_ENOMEM;
    it->stored = 1;
    return 0;
}

/* ClickHouse: the batch's rows wait for the next insert; no dedupe here, a
 * batch inserted twice folds into one (chrows.h), across collectors too. */
static int take_batch_ch(nsc_writer *w, nsc_item *it)
{
    const nsc_a2c_batch *a = &it->a2c;
    ensure_txn(w);
    for (uint32_t i = 0; i < a->nsections; i++)
        nsc_chstore_put(w->c->ch, a->agent, a->epoch, a->seq, i, &it->sb[i]);
    place_ledgers(w, it);
    for (uint32_t i = 0; i < it->nsl; i++) {
        uint32_t k = (uint32_t)(it->sl[i].batch - it->ledgers);  /* its place among the batch's ledgers */
        if (!it->sl[i].proc)
            continue;
        nsc_chstore_put_ledger(w->c->ch, a->agent, a->epoch, a->seq, k, it->sl[i].proc, a->ledgers[k].data,
                               a->ledgers[k].len);
    }
    for (uint32_t i = 0; i < a->nlife; i++) {
        nsc_store_life sl;
        life_of(it, i, &sl);
        nsc_chstore_put_life(w->c->ch, a->agent, a->epoch, a->seq, i, &sl);
    }
    if (hold(w, it))
        return NSC_STORE_ENOMEM;
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

/* The open transaction's batches, after the store said rc about it. */
static void acknowledge(nsc_writer *w, int rc, uint64_t t0)
{
    w->txn_open = 0;
    acknowledge_items(w, w->held, &w->nheld, rc, t0);
}

static int put_clock(void *st, const char *host, const nsc_clock_model *m)
{
    return nsc_store_put_clock(st, host, m);
}

static int put_clock_ch(void *ch, const char *host, const nsc_clock_model *m)
{
    return nsc_chstore_put_clock(ch, host, m);
}

/* The rank progress always, the clock models when due, into the open
 * transaction (LMDB) or the waiting rows (ClickHouse); ended jobs evicted
 * from the live state on the same schedule. The live state's wall clock is
 * the one recorded with them (the LMDB store's begin records it there). */
static int put_state(nsc_writer *w, uint64_t t0)
{
    nsc_collector *c = w->c;
    int64_t off;
    int rc = c->ch ? nsc_chstore_put_wall(c->ch, t0) : 0;
    int wall = !rc && (c->ch ? nsc_chstore_wall_kept(c->ch, &off) : nsc_store_wall_kept(c->store, &off)) == 0;
    pthread_mutex_lock(&c->live_mu);
    if (wall)
        nsc_live_set_wall(c->live, off);
    if (!rc)
        rc = nsc_live_take_progress(c->live, c->ch ? nsc_chstore_put_progress : put_progress,
                                    c->ch ? (void *)c->ch : (void *)c->store);
    if (!rc && t0 >= w->next_persist_ns)  /* after their progress was taken */
        nsc_live_evict(c->live, t0);
    pthread_mutex_unlock(&c->live_mu);
    if (!rc && t0 >= w->next_persist_ns) {
        pthread_mutex_lock(&c->clock_mu);
        rc = c->ch ? nsc_clocks_put_dirty(c->clocks, put_clock_ch, c->ch)
                   : nsc_clocks_put_dirty(c->clocks, put_clock, c->store);
        pthread_mutex_unlock(&c->clock_mu);
        w->next_persist_ns = t0 + c->cfg.clock_persist_s * 1000000000ull;
    }
    return rc;
}

/* ClickHouse: the insert in flight, if any, waited for; its batches
 * acknowledged when ClickHouse took all of its rows (chstore logs what failed). */
static void finish_insert(nsc_writer *w)
{
    if (!w->insert_open)
        return;
    w->insert_open = 0;
    int rc = nsc_chstore_insert_wait(w->c->ch);
    acknowledge_items(w, w->inserting, &w->ninserting, rc, w->insert_t0);
}

/* ClickHouse: everything waiting becomes the next insert, which runs while
 * the writer takes the next batches; one insert at a time, so the previous
 * one is waited for first. */
static int commit_ch(nsc_writer *w)
{
    uint64_t t0 = nsc_mono_ns();
    finish_insert(w);  /* first: the live state learns its batches, their progress rides along now */
    int rc = put_state(w, t0);
    if (rc) {  /* rows missing: none of these is inserted or acknowledged */
        nsc_chstore_discard(w->c->ch);
        acknowledge(w, rc, t0);
        return rc;
    }
    nsc_item **held = w->held;
    size_t cap = w->held_cap;
    w->held = w->inserting, w->held_cap = w->inserting_cap;
    w->inserting = held, w->inserting_cap = cap;
    w->ninserting = w->nheld, w->nheld = 0;
    w->insert_t0 = t0;
    w->insert_open = 1;
    w->txn_open = 0;
    nsc_chstore_insert_start(w->c->ch);
    return 0;
}

/* Commit the open transaction; acknowledge its batches only if that worked.
 * On failure nothing is acknowledged (the agents send again) and the dedupe
 * state is reloaded from the store, which is what was really committed. */
static int commit(nsc_writer *w)
{
    if (!w->txn_open)
        return 0;
    if (w->c->ch)
        return commit_ch(w);
    nsc_collector *c = w->c;
    uint64_t t0 = nsc_mono_ns();
    int rc = nsc_dedupe_put_dirty(w->dedupe, c->store);
    if (!rc)
        rc = put_state(w, t0);
    if (rc)
        nsc_store_abort(c->store);
    else
        rc = nsc_store_commit(c->store);
    if (rc)
        log_store("commit (nothing acknowledged)", rc);
    acknowledge(w, rc, t0);
    if (rc)
        reload_dedupe(w);
    return rc;
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
        int rc = nsc_store_retain(c->store, now, &deleted);
        if (rc)
            log_store("retention", rc);
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

/* How long to wait for the next item: LMDB commits as soon as the queue is
 * empty; ClickHouse gathers rows for larger inserts until ch_flush_ms after
 * the first batch it holds. */
static long wait_ms(const nsc_writer *w)
{
    if (!w->txn_open)
        return 200;
    if (!w->c->ch)
        return 0;
    uint64_t due = w->txn_open_ns + w->c->cfg.ch_flush_ms * 1000000ull, now = nsc_mono_ns();
    return now >= due ? 0 : (long)((due - now) / 1000000ull) + 1;
}

/* Insert now: the group is full, or (ClickHouse) enough rows wait or the
 * first held batch waited ch_flush_ms (a queue that never empties must not
 * hold batches longer). */
static int group_full(const nsc_writer *w)
{
    return w->nheld >= w->c->cfg.group_max ||
           (w->c->ch && (nsc_chstore_pending(w->c->ch) >= (w->c->cfg.ch_flush_mb << 20) || wait_ms(w) == 0));
}

/* A put failed: drop the open transaction and everything held (no ack). */
static void abort_txn(nsc_writer *w)
{
    w->txn_open = 0;
    release_held(w);
    if (w->c->ch) {
        nsc_chstore_discard(w->c->ch);
    } else {
        nsc_store_abort(w->c->store);
        reload_dedupe(w);
    }
}

static void *run(void *arg)
{
    nsc_writer *w = arg;
    int ch_fd = w->c->ch ? nsc_chstore_insert_fd(w->c->ch) : -1;
    zmq_pollitem_t pi[2] = {{w->pair, 0, ZMQ_POLLIN, 0}, {NULL, ch_fd, ZMQ_POLLIN, 0}};
    for (;;) {
        int ready = zmq_poll(pi, ch_fd >= 0 ? 2 : 1, wait_ms(w));
        if (ready > 0 && (pi[1].revents & ZMQ_POLLIN)) {
            finish_insert(w);  /* the insert in flight ended */
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
        } else if (w->c->ch ? take_batch_ch(w, it) : take_batch(w, it)) {
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
    int rc = (w->dedupe = nsc_dedupe_new()) && (w->procs = nsc_procmap_new()) ? nsc_dedupe_load(w->dedupe, c->store)
                                                                               : NSC_STORE_ENOMEM;
    if (rc)
        log_store("cannot load the committed batch sequences (not starting: batches could be stored twice)", rc);
    if (rc || (c->ch ? nsc_chstore_clocks(c->ch, nsc_clocks_adopt, c->clocks) : nsc_clocks_load(c->clocks, c->store)) ||
        !(w->pair = zmq_socket(c->zctx, ZMQ_PAIR)) ||
        zmq_setsockopt(w->pair, ZMQ_LINGER, &linger, sizeof linger) ||
        zmq_setsockopt(w->pair, ZMQ_SNDHWM, &hwm, sizeof hwm) ||
        zmq_setsockopt(w->pair, ZMQ_RCVHWM, &hwm, sizeof hwm) ||
        zmq_bind(w->pair, NSC_WRITER_ENDPOINT) ||
        pthread_create(&w->thread, NULL, run, w)) {
        fprintf(stderr, "ncclscope-collector: writer: cannot start\n");
        if (w->pair)
            zmq_close(w->pair);
        nsc_dedupe_free(w->dedupe);
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
    nsc_dedupe_free(w->dedupe);
    nsc_procmap_free(w->procs);
    free(w->held), free(w->inserting);
    free(w);
}
