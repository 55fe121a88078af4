/* wire_samples.c: sample records for the wire codec's tests and fuzz seeds. */
#include "wire_samples.h"

#include <stdio.h>
#include <string.h>

void sample_hdr(nsc_batch_hdr *h)
{
    memset(h, 0, sizeof *h);
    h->version = NSC_WIRE_VERSION;
    h->seq = 123456789012ull;
    h->stream = 0x8badf00ddeadbeefull;
    h->acked = 123456789000ull;
    h->base_ns = 10000000000000ull;
    h->sent_ns = h->base_ns + 5000000;
    h->clock_err_ns = 37;
    h->proc.pid = 4000000;
    h->proc.local_rank = 3;
    h->proc.gpu = 7;
    strcpy(h->proc.job, "job-42");
    strcpy(h->proc.host, "node-a17.cluster.example");
}

static void sample_descriptor(nsc_event *ev, uint64_t id, const nsc_batch_hdr *h)
{
    switch (ev->type) {
    case NSC_T_COLL:
        ev->d.coll.seq = 1000001;
        ev->d.coll.count = 33554432;
        ev->d.coll.user_tag = UINT64_MAX;
        ev->d.coll.traffic_bytes = 134217728;
        ev->d.coll.parent_group = id - 9;
        ev->d.coll.root = -2;
        ev->d.coll.func = 11;
        ev->d.coll.datatype = 12;
        ev->d.coll.algo = 13;
        ev->d.coll.proto = 14;
        ev->d.coll.kernel_variant = 15;
        ev->d.coll.nchannels = 32;
        ev->d.coll.nwarps = UINT8_MAX;
        ev->d.coll.op = 3;
        break;
    case NSC_T_P2P:
        ev->d.p2p.count = 4096;
        ev->d.p2p.user_tag = 0xfeedfacecafebeefull;
        ev->d.p2p.parent_group = id + 1;
        ev->d.p2p.peer = -7;
        ev->d.p2p.func = 21;
        ev->d.p2p.datatype = 22;
        ev->d.p2p.nchannels = 4;
        break;
    case NSC_T_PROXY_OP:
        ev->d.proxy_op.peer = -1;
        ev->d.proxy_op.nsteps = 8;
        ev->d.proxy_op.chunk_size = 524288;
        ev->d.proxy_op.op_pid = h->proc.pid + 11;
        ev->d.proxy_op.channel = 31;
        ev->d.proxy_op.is_send = 1;
        break;
    case NSC_T_PROXY_STEP: ev->d.proxy_step.step = INT32_MAX; break;
    case NSC_T_KERNEL_CH:
        ev->d.kernel_ch.ptimer_start = 1700000000123456789ull;
        ev->d.kernel_ch.ptimer_stop = UINT64_MAX;
        ev->d.kernel_ch.ptimer_stop_ns = h->base_ns + 999;
        ev->d.kernel_ch.channel = 63;
        break;
    case NSC_T_NET_PLUGIN:
        ev->d.net_plugin.plugin_id = INT64_MIN;
        ev->d.net_plugin.data = UINT64_MAX;
        break;
    case NSC_T_GROUP_API: ev->d.group_api.depth = UINT32_MAX; break;
    case NSC_T_COLL_API:
    case NSC_T_P2P_API:
        ev->d.coll_api.func = (nsc_str)(ev->type * 10 + 1);
        ev->d.coll_api.datatype = UINT16_MAX;
        ev->d.coll_api.root = ev->type == NSC_T_COLL_API ? -3 : 0;  /* p2p_api has no root */
        ev->d.coll_api.count = UINT64_MAX - ev->type;
        ev->d.coll_api.stream = 0x7fabcdef0000ull + ev->type;
        ev->d.coll_api.user_tag = 77 + ev->type;
        break;
    case NSC_T_KERNEL_LAUNCH: ev->d.kernel_launch.stream = UINT64_MAX; break;
    case NSC_T_CE_COLL:
        ev->d.ce_coll.seq = 55;
        ev->d.ce_coll.count = 1ull << 33;
        ev->d.ce_coll.stream = 0x7f0000002000ull;
        ev->d.ce_coll.user_tag = UINT64_MAX;
        ev->d.ce_coll.root = INT32_MIN;
        ev->d.ce_coll.batch_size = UINT32_MAX;
        ev->d.ce_coll.num_batches = 9;
        ev->d.ce_coll.ce_seq = 10;
        ev->d.ce_coll.func = 51;
        ev->d.ce_coll.datatype = 52;
        ev->d.ce_coll.sync_strategy = 53;
        ev->d.ce_coll.intra_batch_sync = 1;
        break;
    case NSC_T_CE_SYNC:
        ev->d.ce_sync.nranks = INT32_MAX;
        ev->d.ce_sync.is_complete = 1;
        break;
    case NSC_T_CE_BATCH:
        ev->d.ce_batch.total_bytes = UINT64_MAX;
        ev->d.ce_batch.num_ops = -6;
        ev->d.ce_batch.use_intra_sync = 1;
        break;
    case NSC_T_KERNEL_PHASE:
        ev->d.kernel_phase.ptimer = UINT64_MAX - 1;
        ev->d.kernel_phase.phase_name = UINT16_MAX;
        ev->d.kernel_phase.channel = UINT8_MAX;
        ev->d.kernel_phase.phase_id = 2;
        break;
    default: break;  /* Group and ProxyCtrl have no descriptor fields */
    }
}

void sample_event(nsc_event *ev, unsigned type, uint64_t id, const nsc_batch_hdr *h)
{
    memset(ev, 0, sizeof *ev);
    ev->type = (uint8_t)type;
    ev->id = id;
    ev->parent = id - 3;
    ev->start_ns = h->base_ns + 1000 * id;
    ev->stop_ns = ev->start_ns + 12345 + type;
    ev->tid = h->proc.pid + 2 + type;
    ev->rank = -(int32_t)type - 1;
    ev->ctx = (uint16_t)(2 + type);
    ev->flags = NSC_EVF_GRAPH | NSC_EVF_SYM;
    sample_descriptor(ev, id, h);
}

void sample_make_foreign(nsc_event *ev, const nsc_batch_hdr *h)
{
    ev->flags |= NSC_EVF_FOREIGN;
    ev->origin_pid = h->proc.pid - 17;
    ev->origin_parent = 0x7f1234567890ull;
    ev->origin_ctx = 0x7f12345600a8ull;
}

void sample_state(nsc_state_rec *s, unsigned state, uint64_t id, const nsc_batch_hdr *h)
{
    memset(s, 0, sizeof *s);
    s->id = id;
    s->ts_ns = h->base_ns + 77 * state + 5;
    s->arg = state % 2 ? UINT64_MAX - state : 1000 + state;
    s->tid = h->proc.pid + state;
    s->state = (uint8_t)state;
}

void sample_ctx(nsc_ctx_def *c, uint16_t index)
{
    memset(c, 0, sizeof *c);
    c->comm_id = 0x9e3779b97f4a7c15ull + index;
    c->index = index;
    c->nnodes = 4;
    c->nranks = 32;
    c->rank = -1;
    c->api_version = 7;
    snprintf(c->name, sizeof c->name, "comm-%u", (unsigned)index);
}

void sample_str(nsc_str_def *s, nsc_str id)
{
    memset(s, 0, sizeof *s);
    s->id = id;
    snprintf(s->text, sizeof s->text, "AllReduce-%u", (unsigned)id);
}

void sample_counters(nsc_counters *c)
{
    memset(c, 0, sizeof *c);
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        c->emitted[t] = 1000000ull * (t + 1);
        c->dropped[t] = t;
    }
    c->emitted[NSC_T_COUNT - 1] = UINT64_MAX;
    c->states_emitted = 123456789;
    c->states_dropped = 42;
    c->bad_handles = 3;
    c->completions_emitted[NSC_T_COLL] = 77;
    c->completions_emitted[NSC_T_P2P] = 5;
    c->completions_dropped[NSC_T_COLL] = 2;
    c->cost_ns = 4000000;
    c->coll_ns = 1000000000;
    c->shed_mask = 1u << NSC_T_PROXY_STEP;
    c->shed_changes = 1;
    c->shed_events = 640;
}

size_t sample_batch(void *buf, size_t cap)
{
    nsc_batch_hdr h;
    nsc_enc e;
    sample_hdr(&h);
    int rc = nsc_enc_begin(&e, buf, cap, &h);
    for (nsc_str i = 1; i <= 3 && rc == 0; i++) {
        nsc_str_def s;
        sample_str(&s, i);
        rc = nsc_enc_str(&e, &s);
    }
    nsc_ctx_def c;
    sample_ctx(&c, 2);
    if (rc == 0)
        rc = nsc_enc_ctx(&e, &c);
    for (unsigned t = 0; t < NSC_T_COUNT && rc == 0; t++) {
        nsc_event ev;
        sample_event(&ev, t, 100 + 2 * t, &h);
        rc = nsc_enc_event(&e, &ev);
        sample_make_foreign(&ev, &h);
        ev.id++;
        if (rc == 0)
            rc = nsc_enc_event(&e, &ev);
    }
    for (unsigned s = 0; s < NSC_S_COUNT && rc == 0; s++) {
        nsc_state_rec st;
        sample_state(&st, s, 100 + s, &h);
        rc = nsc_enc_state(&e, &st);
    }
    nsc_completion done = {.id = 102, .ts_ns = h.base_ns + 50000};
    if (rc == 0)
        rc = nsc_enc_completion(&e, &done);
    nsc_counters cn;
    sample_counters(&cn);
    if (rc == 0)
        rc = nsc_enc_counters(&e, &cn);
    return rc == 0 ? nsc_enc_finish(&e) : 0;
}

const char *sample_doc(const char *path)
{
    static char doc[1 << 20];
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t len = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[len] = 0;
    return doc;
}

static const nsc_str_def ledger_strs[] = {{1, "AllReduce"}, {2, "ncclFloat32"}, {3, "Ring"}, {4, "Simple"}};

static nsc_ledger_edge ledger_edges[3][2];
static nsc_ledger_rec ledger_recs[3];

/* Three AllReduces of one communicator, the last in flight: the shape the
 * agent sends most. */
nsc_ledger_batch sample_ledger(void)
{
    for (int i = 0; i < 3; i++) {
        uint64_t t = 5000000000ull + (uint64_t)i * 2000000;
        ledger_recs[i] = (nsc_ledger_rec){
            .comm_id = 0x5f65f7aca7835f1ull, .seq = 10 + (uint64_t)i, .rank = 3, .flags = 0,
            .func = 1, .datatype = 2, .algo = 3, .proto = 4, .count = 1 << 20, .bytes = 7340032,
            .root = -1, .peer = -1, .nchannels = 2, .api_ns = t - 1500, .enqueue_ns = t,
            .launch_ns = t + 9000, .done_ns = t + 1300000, .gpu_start_ns = t + 21000,
            .gpu_end_ns = t + 1290000, .gpu_spread_ns = 800, .gpu_err_ns = 3000,
            .nchannels_done = 2, .nedges = 2, .edges = ledger_edges[i]};
        for (int e = 0; e < 2; e++)
            ledger_edges[i][e] = (nsc_ledger_edge){.peer = e ? 2 : 4, .channel = (uint8_t)e, .is_send = (uint8_t)!e,
                                            .last_step = -1, .steps = 16, .bytes = 3670016,
                                            .step_sum_ns = 900000 + (uint64_t)e, .step_max_ns = 70000,
                                            .wait_recv_ns = e ? 400000u : 0, .wait_send_ns = 12345};
    }
    ledger_recs[2].flags = NSC_LEDGER_INFLIGHT;
    ledger_recs[2].done_ns = ledger_recs[2].gpu_end_ns = 0;
    ledger_recs[2].nchannels_done = 0;
    ledger_edges[2][1].last_step = 9;
    ledger_edges[2][1].last_state = NSC_S_PROXY_STEP_RECV_WAIT;
    return (nsc_ledger_batch){.pid = 4242, .nstrs = 4, .nrecs = 3, .strs = ledger_strs, .recs = ledger_recs};
}
