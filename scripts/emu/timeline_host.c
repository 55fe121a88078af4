/* timeline_host.c: what a rank's host thread knows of its device timeline.
 *
 * Owns the host's side of the stream it shares with its proxy thread
 * (timeline.c): the device starts it can publish on the wire as it enqueues
 * (a collective that opens a group, a p2p group), and the device's end of
 * what it enqueued, which it works out from the wire with the device's own
 * schedule instead of waiting for its proxy to have made the events.
 */
#include <stdlib.h>

#include "emu.h"

/* Without the clock floor, an end less than this ahead is not slept for
 * before the peers' starts are read (its wake-up would come later). */
#define EMU_HOST_SLEEP_NS 100000

/* This rank's end of collective k given every rank's start. */
static uint64_t schedule_end(emu_rank *r, const emu_op *op, uint32_t k, const uint64_t *ready, emu_step_t *steps)
{
    uint64_t end = ready[r->ci.rank];
    int nch = emu_model_same_channels(r, k) ? 1 : op->nch;
    for (int ch = 0; end != EMU_NEVER && ch < nch; ch++) {
        uint64_t e = emu_model_channel(r, op, k, ch, ready, steps);
        end = e > end ? e : end;
    }
    return end;
}

/* The host's copy of a p2p-only group, whose start it publishes with it. */
static void host_publish_p2p(emu_rank *r, emu_op *ops, size_t n)
{
    uint64_t ready = emu_model_ready(r, &ops[0], r->host_dev_free);
    if (ready == EMU_NEVER)
        return; /* never starts: the proxy publishes that */
    if (n > r->host_p2p_cap) {
        r->host_p2p = realloc(r->host_p2p, n * sizeof *r->host_p2p);
        if (!r->host_p2p)
            emu_die("out of memory");
        r->host_p2p_cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        ops[i].pub_ready = ready;
        emu_wire_p2p e = {.peer = ops[i].peer, .nth = ops[i].nth, .send = ops[i].is_send, .ready = ready,
                          .sig = ops[i].sig};
        emu_wire_p2p_publish(r->w->wire, emu_wire_slot(r, r->ci.rank), &e);
        r->host_p2p[i] = ops[i];
    }
    emu_wire_p2p_wake(r->w->wire, emu_wire_slot(r, r->ci.rank));
    r->host_p2p_n = n;
}

/* The end of the host's last p2p group as its proxy times it (timeline_run,
 * time_op): each op at its meeting with the peer, the device where it was
 * if none is timed. */
static uint64_t host_p2p_end(emu_rank *r)
{
    uint64_t ready = r->host_p2p[0].pub_ready, end = r->host_dev_free;
    bool timed = false;
    for (size_t i = 0; i < r->host_p2p_n; i++) {
        const emu_op *op = &r->host_p2p[i];
        if (emu_timeline_never_ends(true, op))
            continue;
        uint64_t e = emu_timeline_p2p_end(r, op, emu_timeline_p2p_meet(r, op, ready));
        e = e > ready ? e : ready;
        end = !timed || e > end ? e : end;
        timed = true;
    }
    return end;
}

/* What the host now knows of its device: where it is free after all it
 * enqueued, so the next group's start can go on the wire at enqueue. */
static uint64_t host_end_known(emu_rank *r, uint64_t end)
{
    r->host_dev_free = end;
    r->host_may_publish = true;
    return end;
}

/* Wait until the proxy has made the events of collective k - 1. NCCL's host
 * waits for a device whose collective ends no sooner than its proxy moved
 * the data; the modelled end alone let a host run on while a loaded machine
 * held its proxy back for tens of ms, and the proxy then made the
 * collectives queued meanwhile back to back, each stamped in real time with
 * no step's duration in it. One collective of slack: a proxy on time has
 * made it long before, so the host seldom waits (a proxy held back
 * distorts at most two collectives, the job goes on from real time). */
static void wait_played(emu_rank *r, uint32_t k)
{
    uint32_t seen;
    while ((seen = __atomic_load_n(&r->proxy_played, __ATOMIC_SEQ_CST)) < k) {
        __atomic_store_n(&r->host_waits_played, k, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&r->proxy_played, __ATOMIC_SEQ_CST) == seen)
            emu_futex_wait(&r->proxy_played, seen, NULL, false);
        __atomic_store_n(&r->host_waits_played, 0, __ATOMIC_SEQ_CST);
    }
}

/* The device's end after the host's last collective k, from every rank's
 * start on the wire (or from its proxy, which timed it the same way).
 * `pace`: first sleep until the earliest that end can be. */
static uint64_t host_coll_end(emu_rank *r, bool pace)
{
    const emu_op *op = r->host_last;
    uint32_t k = r->host_colls - 1;
    emu_step_t *steps = malloc(emu_model_cells(r, op) * sizeof *steps);
    if (!steps)
        emu_die("out of memory");
    /* First (pace) sleep until the earliest end: its own start at the earliest,
     * every peer there long before. The schedule never shrinks when a start
     * grows, so this is never past the end; when all started together (no
     * fault) the peers' entries are there on waking, one wait, not two. Not
     * for short collectives: their peers are seldom there sooner than the
     * sleep's own wake-up, which would then be one wait more. With the clock
     * floor only to the horizon, as the host's own wait for the end. */
    for (int q = 0; q < r->ci.nranks; q++)
        r->host_ready[q] = 0;
    r->host_ready[r->ci.rank] = emu_model_ready(r, op, r->host_dev_free);
    uint64_t soonest = pace ? schedule_end(r, op, k, r->host_ready, steps) : EMU_NEVER;
    if (soonest != EMU_NEVER && emu_clock_floor_on())
        emu_timeline_wait_horizon(soonest);
    else if (soonest != EMU_NEVER && soonest > emu_true_ns() + EMU_HOST_SLEEP_NS)
        emu_sleep_until(soonest);
    uint64_t end = EMU_NEVER;
    if (__atomic_load_n(&r->proxy_timed, __ATOMIC_ACQUIRE) == k + 1)
        end = r->proxy_end; /* the proxy read the same starts (the wire's rule holds) */
    else if (emu_timeline_gather(r, op, k, r->host_ready, -1))
        end = schedule_end(r, op, k, r->host_ready, steps);
    free(steps);
    return end;
}

/* Is the end of what the host enqueued last its to work out from the wire?
 * Not after a p2p group its proxy published: those ends are the proxy's. */
static bool host_knows_end(const emu_rank *r)
{
    return r->w->wire && (r->host_p2p_n || !r->host_last_p2p);
}

/* The device's end of what the host enqueued, from the wire; `pace` as
 * host_coll_end. */
static uint64_t host_end(emu_rank *r, bool pace)
{
    if (r->host_may_publish)
        return r->host_dev_free;
    if (r->host_p2p_n) /* a p2p group the host published: it meets its peers too (once) */
        return host_end_known(r, host_p2p_end(r));
    return host_end_known(r, host_coll_end(r, pace));
}

uint64_t emu_timeline_host_end(emu_rank *r, bool sync)
{
    if (!r->host_colls && !r->host_last_p2p) /* nothing enqueued yet */
        return 0;
    if (!host_knows_end(r)) {
        emu_proxy_drain(r);
        /* the proxy is idle: its end is final (its events may have been
         * made ahead of it, clock floor) */
        return host_end_known(r, r->dev_free);
    }
    if (sync && !r->host_p2p_n)
        wait_played(r, r->host_colls - 1);
    return host_end(r, true);
}

/* The host knows its device's next start once it computed where the device
 * is free (host_sync, a train job's switch of communicator, or here, from
 * the wire, when it can), and it has read every peer's previous collective
 * then (the wire's rule for publishing the next). Published at enqueue, the starts are
 * on the wire before the proxies need them: a proxy seldom waits for its peers,
 * the hosts (which wait for their devices anyway) do. */
void emu_timeline_host_publish(emu_rank *r, emu_op *ops, size_t n)
{
    bool all_p2p = true;
    for (size_t i = 0; i < n; i++) {
        if (ops[i].p2p)
            ops[i].nth = r->p2p_nth[2 * ops[i].peer + (ops[i].is_send ? 1 : 0)]++;
        all_p2p &= ops[i].p2p;
    }
    /* Where the device is free, when the host can tell from the wire: a
     * group right after another on this communicator (no wait for the
     * device between them: train) has its start on the wire at enqueue
     * too, so no reader of it, its own host included, waits for its proxy. */
    if (!r->host_may_publish && (r->host_colls || r->host_last_p2p) && host_knows_end(r))
        host_end(r, false);
    r->host_p2p_n = 0;
    if (!r->host_may_publish || !r->w->wire)
        return;
    r->host_may_publish = false;
    if (all_p2p) {
        host_publish_p2p(r, ops, n);
        return;
    }
    if (ops[0].p2p)
        return;
    ops[0].pub_ready = emu_model_ready(r, &ops[0], r->host_dev_free);
    emu_wire_publish(r->w->wire, emu_wire_slot(r, r->ci.rank), r->host_colls, ops[0].pub_ready, ops[0].sig,
                     emu_wire_slot(r, 0), r->ci.nranks);
}
