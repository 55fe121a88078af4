/* batch.c: the shipper's backlog of batches (see shipper.c, internal.h).
 *
 * Owns the batches' buffers and their order: a batch begun at the backlog's
 * tail in a free buffer (the one released last, still in cache), finished
 * with the process's counters, and its buffer freed once acknowledged; and
 * the counter's times, converted to CLOCK_MONOTONIC ns on the shipper's
 * copies with the line this file keeps calibrated. Shipper thread only, but
 * for the start and the fork handlers.
 */
#include "internal.h"
#include "wire.h"

#define COUNTERS_RESERVE 4096u /* room kept for the counters that end a batch */
#define CALIBRATE_NS 10000000ull /* a calibration pair for nsc_tick's counts */

/* ---- backlog --------------------------------------------------------------- */

uint8_t *nsc_ship_batch_buf(uint64_t seq)
{
    return nsc_ship.mem + (size_t)nsc_ship.ring[seq % nsc_ship.nbatches].buf * NSC_SHIP_BATCH_CAP;
}

/* Batches before next are acknowledged: their buffers are free. */
void nsc_ship_release_upto(uint64_t next)
{
    for (; nsc_ship.acked < next; nsc_ship.acked++)
        nsc_ship.spare[nsc_ship.nspare++] = nsc_ship.ring[nsc_ship.acked % nsc_ship.nbatches].buf;
}

/* Every buffer free, buffer 0 on top. */
void nsc_ship_spares_reset(void)
{
    for (nsc_ship.nspare = 0; nsc_ship.nspare < nsc_ship.nbatches; nsc_ship.nspare++)
        nsc_ship.spare[nsc_ship.nspare] = (uint32_t)(nsc_ship.nbatches - 1 - nsc_ship.nspare);
}

int nsc_ship_backlog_full(void)
{
    /* one buffer stays free for the last counters of a final stop */
    return nsc_ship.tail - nsc_ship.acked + 1 >= nsc_ship.nbatches;
}

int nsc_ship_batch_begin(uint64_t now, uint64_t base_ns, int final)
{
    if (nsc_ship.tail - nsc_ship.acked >= nsc_ship.nbatches)
        return -1;
    nsc_batch_hdr hdr = {.version = NSC_WIRE_VERSION, .seq = nsc_ship.seq, .stream = nsc_ship.stream,
                         .base_ns = base_ns, .sent_ns = now, .proc = nsc_ship.cfg.proc,
                         .final = (uint8_t)final,
                         .clock_err_ns = nsc_g_counter ? nsc_clock_bound(&nsc_ship.clock) : 0};
    hdr.proc.pid = nsc_g_pid;
    /* at most tail - acked buffers are taken: one is spare */
    uint32_t buf = nsc_ship.spare[nsc_ship.nspare - 1];
    if (nsc_enc_begin(&nsc_ship.enc, nsc_ship.mem + (size_t)buf * NSC_SHIP_BATCH_CAP, NSC_SHIP_BATCH_CAP, &hdr) != 0 ||
        nsc_enc_reserve(&nsc_ship.enc, COUNTERS_RESERVE) != 0)
        return -1;
    nsc_ship.nspare--;
    nsc_ship.ring[nsc_ship.tail % nsc_ship.nbatches].buf = buf;
    nsc_ship.seq++;
    nsc_ship.open = 1;
    nsc_ship.open_since = nsc_ship.last_begin = now;
    return 0;
}

/* ---- the counter's times ------------------------------------------------------ */

static uint64_t ticks_ns(uint64_t ticks)
{
    return nsc_g_counter ? (uint64_t)((double)ticks * nsc_ship.clock.ns_per_tick) : ticks;
}

static uint64_t cost_ticks_ns(uint64_t ticks)
{
    return nsc_g_cost_counter ? (uint64_t)((double)ticks * nsc_ship.clock.ns_per_tick) : ticks;
}

static void note_jump(int jumped)
{
    if (jumped)
        nsc_log(NSC_LOG_INFO, "ncclscope: the CPU's counter jumped; calibrating anew");
}

/* A record as it is shipped: its times in CLOCK_MONOTONIC ns (converted in
 * the shipper's own copy, an event's in its cells). Where the line does not
 * reach a count yet (a run's first milliseconds), a pair is taken first:
 * clock.c. */
void nsc_ship_rec_ns(nsc_rec *r)
{
    if (nsc_g_counter)
        note_jump(nsc_clock_rec_ns(&nsc_ship.clock, r));
}

/* A pair every CALIBRATE_NS: the line follows CLOCK_MONOTONIC's slewing. */
void nsc_ship_calibrate(uint64_t now)
{
    if (!nsc_g_counter || now - nsc_ship.calibrated_at < CALIBRATE_NS)
        return;
    nsc_ship.calibrated_at = now;
    note_jump(nsc_clock_calibrate(&nsc_ship.clock));
}

/* The process's counters, the guard's times in ns. */
void nsc_ship_counters_sum(nsc_counters *c)
{
    nsc_counters_sum(c);
    c->cost_ns = cost_ticks_ns(c->cost_ns);
    c->coll_ns = ticks_ns(c->coll_ns);
}

void nsc_ship_batch_finish(void)
{
    nsc_counters c;
    nsc_ship_counters_sum(&c);
    c.shed_mask = nsc_ship.shed.mask;
    c.shed_changes = nsc_ship.shed.changes;
    nsc_enc_counters(&nsc_ship.enc, &c); /* fits: the reserve is for it */
    nsc_ship.ring[nsc_ship.tail % nsc_ship.nbatches].len = (uint32_t)nsc_enc_finish(&nsc_ship.enc);
    nsc_ship.tail++;
    nsc_ship.open = 0;
}
