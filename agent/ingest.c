/* ingest.c: socket, decoding, rejects, and routing of batches (see ingest.h). */
#include "ingest.h"

#include "acks.h"
#include "held.h"
#include "lsave.h"
#include "sockfile.h"

#include <limits.h>
#include <stdio.h>
#include <zmq.h>

static const char *const reasons[NSC_REJECT_COUNT] = {
    [1] = "empty", [2] = "too_large", [3] = "truncated", [4] = "bad_type", [5] = "too_many",
    [6] = "too_deep", [7] = "bad_version", [8] = "trailing", [9] = "bad_record",
    [10] = "bad_value", [11] = "missing", [12] = "nomem", [NSC_REJECT_MULTIPART] = "multipart",
};

const char *nsc_ingest_reason(unsigned idx) { return idx < NSC_REJECT_COUNT ? reasons[idx] : NULL; }

int nsc_ingest_open(nsc_agent *a, char err[256])
{
    int64_t zmax = (int64_t)(a->cfg.max_batch_kb * 1024 * 2);
    int linger = 0, hwm = a->cfg.queue > INT_MAX ? INT_MAX : (int)a->cfg.queue;
    /* Decoded: the PXN candidates (and the Coll events' progress), the
     * foreign events, and what the ledger builder folds (with every state
     * and completion); every other event is only checked, then spliced. */
    a->scan.keep_types = 1u << NSC_T_COLL | 1u << NSC_T_P2P | 1u << NSC_T_CE_COLL | 1u << NSC_T_COLL_API | 1u << NSC_T_P2P_API |
                         1u << NSC_T_KERNEL_LAUNCH | 1u << NSC_T_KERNEL_CH | 1u << NSC_T_PROXY_OP |
                         1u << NSC_T_PROXY_STEP;
    a->scan.keep_flags = NSC_EVF_FOREIGN;
    a->scan.keep_states = 1;
    if (!(a->zctx = zmq_ctx_new())) {
        snprintf(err, 256, "zmq_ctx_new: %s", zmq_strerror(zmq_errno()));
        return -1;
    }
    if (nsc_acks_open(a, err) != 0)
        return -1;
    if ((a->pull = zmq_socket(a->zctx, ZMQ_PULL)) &&
        (zmq_setsockopt(a->pull, ZMQ_MAXMSGSIZE, &zmax, sizeof zmax) != 0 ||
         zmq_setsockopt(a->pull, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 ||
         zmq_setsockopt(a->pull, ZMQ_LINGER, &linger, sizeof linger) != 0)) {
        snprintf(err, 256, "agent.sock: %s", zmq_strerror(zmq_errno()));
        return -1;
    }
    return nsc_sockfile_bind(&a->cfg, a->pull, "agent.sock", err);
}

void nsc_ingest_close(nsc_agent *a)
{
    if (a->pull)
        zmq_close(a->pull);
    nsc_acks_close(a);
    if (a->zctx)
        zmq_ctx_term(a->zctx);
    a->pull = a->zctx = NULL;
    nsc_scan_free(&a->scan);
}

/* The batch's records into p's section in their order, spliced from msg
 * (the bytes s scanned): foreign events go to the PXN resolver instead, and
 * the events the scan decoded are PXN candidates. */
static void route_records(nsc_agent *a, nsc_reg_proc *p, const void *msg, size_t len, const nsc_scan *s,
                          uint64_t now_ns)
{
    const nsc_batch *b = &s->b;
    nsc_splice sp;
    size_t k = 0;  /* b->events[k]: the next decoded event */
    if (nsc_splice_begin(&sp, msg, len) != NSC_WIRE_OK)
        return;  /* s was scanned from msg: never */
    for (uint32_t r = 0; nsc_splice_tag(&sp) >= 0; r++) {
        const nsc_event *ev = k < b->nevents && s->event_at[k] == r ? &b->events[k++] : NULL;
        if (ev && (ev->flags & NSC_EVF_FOREIGN)) {
            a->in.foreign++;
            nsc_pxn_submit(a->pxn, p->key, p->id.pid, ev, now_ns);
            if (nsc_splice_copy(&sp, NULL) != NSC_WIRE_OK)
                return;
            continue;
        }
        if (nsc_out_splice(a->out, p, &sp, b->hdr.base_ns) != 0) {
            a->in.nomem++;  /* this record is lost; the next ones may fit */
            if (nsc_splice_copy(&sp, NULL) != NSC_WIRE_OK)
                return;
        }
        if (ev)
            nsc_pxn_note(a->pxn, p->key, ev);
    }
}

/* The batch's records into the ledger builder. Its records come in the order
 * the plugin's threads' rings were drained, not in time: the states go
 * first, then what opens a collective, then the collectives' children (in
 * their order: a ProxyOp stops after its steps, on the same thread), then
 * the completions. Foreign events come re-attached, through the PXN
 * resolver. */
static void feed_ledger(nsc_agent *a, nsc_reg_proc *p, const nsc_batch *b, uint64_t now_ns)
{
    static const uint32_t passes[] = {
        1u << NSC_T_COLL | 1u << NSC_T_P2P | 1u << NSC_T_CE_COLL | 1u << NSC_T_COLL_API | 1u << NSC_T_P2P_API |
            1u << NSC_T_KERNEL_LAUNCH,
        1u << NSC_T_PROXY_STEP | 1u << NSC_T_PROXY_OP | 1u << NSC_T_KERNEL_CH};
    for (size_t i = 0; i < b->nstates; i++)
        nsc_lbuild_state(a->lb, p, &b->states[i]);
    for (unsigned k = 0; k < sizeof passes / sizeof passes[0]; k++)
        for (size_t i = 0; i < b->nevents; i++)
            if (passes[k] >> b->events[i].type & 1 && !(b->events[i].flags & NSC_EVF_FOREIGN))
                nsc_lbuild_event(a->lb, p, &b->events[i], now_ns);
    for (size_t i = 0; i < b->ncompletions; i++)
        nsc_lbuild_completion(a->lb, p, &b->completions[i]);
    nsc_lbuild_batch_end(a->lb, p);
}

void nsc_ingest_route(nsc_agent *a, const void *msg, size_t len, const nsc_scan *s, uint64_t now_ns)
{
    const nsc_batch *b = &s->b;
    unsigned news;
    nsc_reg_proc *p = nsc_reg_get(a->reg, &b->hdr, now_ns, &news);
    if (!p) {
        a->in.nomem++;
        return;
    }
    if (news & NSC_REG_STARTED) {
        if (nsc_out_life(a->out, p, NSC_A2C_STARTED, now_ns) != 0)
            a->in.nomem++;
        nsc_held_heard(a, p);
        nsc_lsave_heard(a, p);
    }
    if (nsc_reg_learn(a->reg, p, s) != 0)
        a->in.table_full++;
    if ((news & NSC_REG_FINISHED) && nsc_out_life(a->out, p, NSC_A2C_FINISHED, now_ns) != 0)
        a->in.nomem++;
    route_records(a, p, msg, len, s, now_ns);
    feed_ledger(a, p, b, now_ns);
    nsc_acks_took(a, p, &b->hdr);
    a->in.events += s->nevents;
    a->in.states += s->nstates;
    a->in.completions += s->ncompletions;
    a->in.defs += b->nstrs + b->nctxs;
}

static void take(nsc_agent *a, zmq_msg_t *m, uint64_t now_ns)
{
    size_t len = zmq_msg_size(m);
    a->in.messages += !a->in_multipart;  /* a message, not a part */
    a->in.bytes += len;
    if (zmq_msg_more(m) || a->in_multipart) {
        a->in.rejects[NSC_REJECT_MULTIPART] += !a->in_multipart;  /* once per message */
        a->in_multipart = zmq_msg_more(m);
        return;
    }
    nsc_dec_limits lim = {.max_msg = (size_t)a->cfg.max_batch_kb * 1024};
    int rc = nsc_batch_scan(zmq_msg_data(m), len, &lim, &a->scan);
    if (rc != NSC_WIRE_OK) {
        a->in.rejects[-rc < NSC_REJECT_COUNT ? -rc : NSC_WIRE_OK]++;
        return;
    }
    if (!nsc_acks_admit(a, &a->scan.b.hdr))
        return;
    nsc_ingest_route(a, zmq_msg_data(m), len, &a->scan, now_ns);
    a->final_waits |= a->scan.b.hdr.final && a->scan.b.hdr.stream;
}

void nsc_ingest_flush(nsc_agent *a, uint64_t now_ns)
{
    nsc_held_save sv;
    if (nsc_held_stage(a, &sv) != 0) {
        a->in.nomem++;
        return;
    }
    if (nsc_lsave_stage(a, &sv.c) != 0) {
        a->in.nomem++;
        nsc_held_done(a, &sv);
        return;
    }
    if (nsc_out_flush(a->out, now_ns) < 0)
        a->in.nomem++;
    nsc_lsave_done(a, &sv.c);
    nsc_held_done(a, &sv);
}

unsigned nsc_ingest_drain(nsc_agent *a, unsigned max)
{
    unsigned n = 0;
    zmq_msg_t m;
    zmq_msg_init(&m);
    uint64_t now = nsc_mono_ns();
    for (; n < max; n++) {
        if (zmq_msg_recv(&m, a->pull, ZMQ_DONTWAIT) < 0)
            break;  /* EAGAIN: nothing more; EINTR: the loop checks for signals */
        take(a, &m, now);
        /* A spool entry as soon as flush_kb waits, not after the burst: the
         * batch being built stays within flush_kb plus one message. */
        if (nsc_out_waiting(a->out) >= a->cfg.flush_kb * 1024)
            nsc_ingest_flush(a, now);
    }
    /* An exiting process waits for the acknowledgement of its final batch:
     * stored now, not at the next flush_ms. */
    if (a->final_waits)
        nsc_ingest_flush(a, now);
    a->final_waits = 0;
    zmq_msg_close(&m);
    return n;
}

/* ---- the PXN resolver's view of the registry and output ---------------- */

static uint64_t origin_of(void *arg, uint64_t proxy_key, uint32_t origin_pid)
{
    nsc_agent *a = arg;
    nsc_reg_proc *proxy = nsc_reg_by_key(a->reg, proxy_key);
    nsc_reg_proc *o = proxy ? nsc_reg_find(a->reg, proxy->id.host, origin_pid) : NULL;
    return o ? o->key : 0;
}

static void emit(void *arg, uint64_t section_key, const nsc_event *ev, const nsc_a2c_alias *alias)
{
    nsc_agent *a = arg;
    nsc_reg_proc *p = nsc_reg_by_key(a->reg, section_key);
    if (!p) {  /* the process was reaped while the event waited: linger_ms < pxn_hold_ms */
        a->in.lost++;
        return;
    }
    if (nsc_out_add(a->out, p, ev->type, ev, ev->start_ns) != 0)
        a->in.nomem++;
    if (alias && nsc_out_alias(a->out, alias) != 0)
        a->in.nomem++;
    nsc_reg_proc *proxy = alias ? nsc_reg_find(a->reg, p->id.host, alias->proxy_pid) : NULL;
    if (proxy)
        nsc_lbuild_alias(a->lb, proxy, p, alias);
    nsc_lbuild_event(a->lb, p, ev, nsc_mono_ns());
}

/* The builder's records go into the open batch, beside the events. */
static void emit_ledger(void *arg, nsc_reg_proc *p, const nsc_ledger_rec *r)
{
    nsc_agent *a = arg;
    if (nsc_out_ledger(a->out, p, r) != 0)
        a->in.nomem++;
}

nsc_lbuild *nsc_ingest_lbuild_new(nsc_agent *a)
{
    return nsc_lbuild_new(a->cfg.hang_ms * 1000000ull, a->cfg.ledger_pxn_wait_ms * 1000000ull,
                          (uint32_t)a->cfg.ledger_max_open, emit_ledger, a);
}

nsc_pxn_sink nsc_ingest_pxn_sink(nsc_agent *a) { return (nsc_pxn_sink){a, origin_of, emit}; }
