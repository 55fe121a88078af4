/* test_versions.c: each API version's descriptor reaches the wire with its
 * fields (v3, v4, v6, v7; v5 is covered in test_plugin.c). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static nsc_recv *finish(void *dl, nsc_recv_totals *t)
{
    dlclose(dl);
    nsc_recv *rc = h_recv_stop(t);
    cr_assert_eq(t->bad_batches, 0);
    return rc;
}

Test(versions, v3_learns_the_communicator_from_its_first_coll)
{
    h_env();
    h_recv_start();
    void *dl, *ctx, *h;
    const ncclProfiler_v3_t *p = h_load(3, &dl);
    cr_assert_not_null(p);
    int mask = 0;
    cr_assert_eq(p->init(&ctx, &mask), ncclSuccess);
    ncclProfilerEventDescr_v3_t d = {.type = ncclProfileColl, .rank = 3};
    d.coll.name = "tp";
    d.coll.commHash = 0x77;
    d.coll.seqNumber = 9;
    d.coll.func = "AllGather";
    d.coll.nMaxChannels = 4;
    p->startEvent(ctx, &h, &d);
    memset(&d, 0, sizeof d);
    d.type = ncclProfileProxyOp;
    d.parentObj = h;
    d.rank = 3;
    d.proxyOp.pid = getpid();
    d.proxyOp.peer = 5;
    d.proxyOp.chunkSize = 1 << 17;
    void *op;
    p->startEvent(ctx, &op, &d);
    ncclProfilerEventStateArgs_v3_t a = {.proxyOp = {.transSize = 512, .steps = 1}};
    p->recordEventState(op, (ncclProfilerEventState_t)2 /* SendTransmitted */, &a);
    p->stopEvent(op);
    p->stopEvent(h);
    p->finalize(ctx);
    nsc_recv_totals t;
    nsc_recv *rc = finish(dl, &t);
    const nsc_recv_rank *rk = nsc_recv_rank_at(rc, 0);
    cr_assert_eq(nsc_recv_nranks(rc), 1);
    cr_assert_eq(rk->comm_id, 0x77);
    cr_assert_eq(rk->rank, 3);
    cr_assert_eq(rk->states[NSC_S_PROXY_OP_SEND_TRANSMITTED], 1);
    const nsc_event *c = nsc_recv_find(rc, NSC_T_COLL, NULL, NULL);
    cr_assert_eq(c->d.coll.seq, 9);
    cr_assert_eq(c->d.coll.nchannels, 4);
    cr_assert_str_eq(nsc_recv_str(rc, (uint32_t)getpid(), c->d.coll.func), "AllGather");
    const nsc_event *o = nsc_recv_find(rc, NSC_T_PROXY_OP, NULL, NULL);
    cr_assert_eq(o->d.proxy_op.peer, 5);
    cr_assert_eq(o->d.proxy_op.chunk_size, 1 << 17);
    cr_assert_eq(o->parent, c->id);
    cr_assert_eq(t.completions, 1);
    nsc_recv_free(rc);
}

Test(versions, v4_kernel_channel_timer_and_p2p)
{
    h_env();
    h_recv_start();
    void *dl, *ctx, *p2p, *kch;
    const ncclProfiler_v4_t *p = h_load(4, &dl);
    int mask;
    cr_assert_eq(p->init(&ctx, &mask, "pp", 0x44, 2, 8, 6, h_logger), ncclSuccess);
    ncclProfilerEventDescr_v4_t d = {.type = ncclProfileP2p, .rank = 6};
    d.p2p.func = "Send";
    d.p2p.datatype = "bfloat16";
    d.p2p.count = 77;
    d.p2p.peer = 7;
    d.p2p.nChannels = 3;
    p->startEvent(ctx, &p2p, &d);
    memset(&d, 0, sizeof d);
    d.type = ncclProfileKernelCh;
    d.parentObj = p2p;
    d.rank = 6;
    d.kernelCh.channelId = 2;
    d.kernelCh.pTimer = 555;
    p->startEvent(ctx, &kch, &d);
    ncclProfilerEventStateArgs_v4_t a = {.kernelCh = {999}};
    p->recordEventState(kch, (ncclProfilerEventState_t)22, &a);
    p->stopEvent(p2p);
    p->stopEvent(kch);
    p->finalize(ctx);
    nsc_recv_totals t;
    nsc_recv *rc = finish(dl, &t);
    const nsc_event *e = nsc_recv_find(rc, NSC_T_P2P, NULL, NULL);
    cr_assert_eq(e->d.p2p.count, 77);
    cr_assert_eq(e->d.p2p.peer, 7);
    cr_assert_eq(e->d.p2p.nchannels, 3);
    cr_assert_str_eq(nsc_recv_str(rc, (uint32_t)getpid(), e->d.p2p.datatype), "bfloat16");
    const nsc_event *k = nsc_recv_find(rc, NSC_T_KERNEL_CH, NULL, NULL);
    cr_assert_eq(k->d.kernel_ch.channel, 2);
    cr_assert_eq(k->d.kernel_ch.ptimer_start, 555);
    cr_assert_eq(k->d.kernel_ch.ptimer_stop, 999);
    cr_assert_eq(t.completions, 1); /* the KernelCh completes the P2p */
    cr_assert_eq(nsc_recv_rank_at(rc, 0)->comm_id, 0x44);
    nsc_recv_free(rc);
}

Test(versions, v6_copy_engine_events)
{
    h_env();
    h_recv_start();
    void *dl, *ctx, *h, *s;
    const ncclProfiler_v6_t *p = h_load(6, &dl);
    int mask;
    cr_assert_eq(p->init(&ctx, 0x66, &mask, "ce", 1, 4, 0, h_logger), ncclSuccess);
    ncclProfilerEventDescr_v6_t d = {.type = ncclProfileCeColl};
    d.ceColl.seqNumber = 12;
    d.ceColl.func = "AllGather";
    d.ceColl.syncStrategy = "batched";
    d.ceColl.batchSize = 8;
    d.ceColl.numBatches = 2;
    d.ceColl.ceSeqNum = 3;
    p->startEvent(ctx, &h, &d);
    memset(&d, 0, sizeof d);
    d.type = ncclProfileCeSync;
    d.parentObj = h;
    d.ceCollSync.isComplete = true;
    d.ceCollSync.nRanks = 4;
    p->startEvent(ctx, &s, &d);
    p->stopEvent(s);
    p->stopEvent(h);
    p->finalize(ctx);
    nsc_recv_totals t;
    nsc_recv *rc = finish(dl, &t);
    const nsc_event *e = nsc_recv_find(rc, NSC_T_CE_COLL, NULL, NULL);
    cr_assert_eq(e->d.ce_coll.seq, 12);
    cr_assert_eq(e->d.ce_coll.batch_size, 8);
    cr_assert_eq(e->d.ce_coll.num_batches, 2);
    cr_assert_eq(e->d.ce_coll.ce_seq, 3);
    cr_assert_str_eq(nsc_recv_str(rc, (uint32_t)getpid(), e->d.ce_coll.sync_strategy), "batched");
    const nsc_event *y = nsc_recv_find(rc, NSC_T_CE_SYNC, NULL, NULL);
    cr_assert_eq(y->d.ce_sync.nranks, 4);
    cr_assert_eq(y->parent, e->id);
    nsc_recv_free(rc);
}

Test(versions, v7_user_tags_variants_phases)
{
    h_env();
    h_recv_start();
    void *dl, *ctx, *api, *coll, *ph;
    const ncclProfiler_v7_t *p = h_load(7, &dl);
    int mask;
    cr_assert_eq(p->init(&ctx, 0x77, &mask, "w", 1, 2, 0, h_logger), ncclSuccess);
    ncclProfilerEventDescr_v7_t d = {.type = ncclProfileCollApi};
    d.collApi.func = "ReduceScatter";
    d.collApi.graphCaptured = true;
    d.collApi.userTag = 0x1234;
    p->startEvent(ctx, &api, &d);
    memset(&d, 0, sizeof d);
    d.type = ncclProfileColl;
    d.parentObj = api;
    d.coll.func = "ReduceScatter";
    d.coll.kernelVariant = "sym_ll";
    d.coll.isSymColl = true;
    d.coll.userTag = 0x1234;
    p->startEvent(ctx, &coll, &d);
    memset(&d, 0, sizeof d);
    d.type = ncclProfileKernelPhase;
    d.parentObj = coll;
    d.kernelPhase.channelId = 1;
    d.kernelPhase.phaseId = 1;
    d.kernelPhase.phaseName = "compute";
    d.kernelPhase.pTimer = 4242;
    p->startEvent(ctx, &ph, &d);
    ncclProfilerEventStateArgs_v7_t a = {.kernelCh = {5353}};
    p->recordEventState(ph, (ncclProfilerEventState_t)31 /* KernelPhaseStop */, &a);
    p->stopEvent(ph);
    p->stopEvent(coll);
    p->stopEvent(api);
    p->finalize(ctx);
    nsc_recv_totals t;
    nsc_recv *rc = finish(dl, &t);
    uint32_t pid = (uint32_t)getpid();
    const nsc_event *a7 = nsc_recv_find(rc, NSC_T_COLL_API, NULL, NULL);
    cr_assert_eq(a7->d.coll_api.user_tag, 0x1234);
    cr_assert(a7->flags & NSC_EVF_GRAPH);
    const nsc_event *c = nsc_recv_find(rc, NSC_T_COLL, NULL, NULL);
    cr_assert_eq(c->d.coll.user_tag, 0x1234);
    cr_assert(c->flags & NSC_EVF_SYM);
    cr_assert_str_eq(nsc_recv_str(rc, pid, c->d.coll.kernel_variant), "sym_ll");
    cr_assert_eq(c->parent, a7->id);
    const nsc_event *k = nsc_recv_find(rc, NSC_T_KERNEL_PHASE, NULL, NULL);
    cr_assert_eq(k->d.kernel_phase.ptimer, 4242);
    cr_assert_eq(k->d.kernel_phase.phase_id, 1);
    cr_assert_str_eq(nsc_recv_str(rc, pid, k->d.kernel_phase.phase_name), "compute");
    cr_assert_eq(t.states[NSC_S_KERNEL_PHASE_STOP], 1);
    nsc_recv_free(rc);
}

/* One bad variable: init fails (NCCL runs without the plugin). */
static void init_refused(const char *var, const char *value)
{
    h_env();
    setenv(var, value, 1);
    void *dl, *ctx = NULL;
    const ncclProfiler_v5_t *p = h_load(5, &dl);
    int mask = 0;
    cr_assert_neq(p->init(&ctx, 1, &mask, "x", 1, 1, 0, h_logger), ncclSuccess, "%s=%s", var, value);
    dlclose(dl);
}

Test(versions, bad_configuration_fails_init_only)
{
    init_refused("NCCLSCOPE_EVENT_MASK", "coll,nosuchtype");
}

/* A self-cost budget that is not a percentage refuses rather than guesses. */
Test(versions, bad_budget_fails_init)
{
    init_refused("NCCLSCOPE_BUDGET_PCT", "1%");
}
