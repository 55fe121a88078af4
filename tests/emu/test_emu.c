/* test_emu.c: end-to-end tests of ncclscope-emu with the record plugin: the
 * real log replayed reproduces its calls and parent links exactly; every API
 * version's descriptors read back through our headers; the summary matches
 * what the plugin received; PXN addresses fault; killed and hung ranks; the
 * events a large AlltoAll holds open; init failure and "none"; the clock
 * shim. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event.h"
#include "test_emu_util.h"

#define MAXH 4096

/* ---- replay of the real log ---- */

typedef struct logev {
    uint64_t start_ns, addr, parent;
    int type;
    size_t line;
} logev;

static int cmp_logev(const void *a, const void *b)
{
    const logev *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

Test(emu, replay_real_log_reproduces_calls_and_parents, .timeout = 30)
{
    const char *dir = tmpdir_new();
    char args[1024];
    snprintf(args, sizeof args, "--replay %s --speed 0", EMU_TRACE);
    cr_assert_eq(run_emu(dir, NULL, args), 0);
    jlines log = {0}, rec = {0};
    jlines_read_file(EMU_TRACE, &log);
    jlines_read_dir(dir, &rec);

    /* The log's events in replay order, its counts per type and per state. */
    static logev ev[MAXH];
    size_t nev = 0;
    uint64_t log_types[NSC_T_COUNT] = {0}, log_states[NSC_S_COUNT] = {0};
    for (size_t i = 0; i < log.n; i++) {
        const nsc_json *r = nsc_json_root(&log.docs[i]);
        if (strcmp(jstr(r, "recordType"), "state") == 0) {
            log_states[jnum(r, "id")]++;
            continue;
        }
        if (strcmp(jstr(r, "recordType"), "event") != 0)
            continue;
        cr_assert_lt(nev, MAXH);
        logev *e = &ev[nev++];
        e->type = nsc_type_from_name(jstr(r, "type") + strlen("ncclProfile"));
        cr_assert_geq(e->type, 0);
        cr_assert_eq(nsc_json_fixed(nsc_json_get(nsc_json_get(r, "start"), "ts"), 3, &e->start_ns), 0);
        e->addr = jhex(r, "eventAddr");
        e->parent = jhex(r, "parentObj");
        e->line = i;
        log_types[e->type]++;
    }
    qsort(ev, nev, sizeof *ev, cmp_logev);

    /* The record plugin's calls in the order it received them. */
    size_t k = 0;
    uint64_t rec_types[NSC_T_COUNT] = {0}, rec_states[NSC_S_COUNT] = {0}, rec_stops = 0;
    static uint64_t handle_of[MAXH];
    for (size_t i = 0; i < rec.n; i++) {
        const nsc_json *r = nsc_json_root(&rec.docs[i]);
        const char *call = jstr(r, "call");
        if (strcmp(call, "state") == 0)
            rec_states[jnum(r, "state")]++;
        else if (strcmp(call, "stop") == 0)
            rec_stops++;
        if (strcmp(call, "start") != 0)
            continue;
        cr_assert_lt(k, nev, "more starts than the log has events");
        int t = nsc_type_from_name(jstr(r, "type"));
        cr_assert_eq(t, ev[k].type, "start %zu: type %s", k, jstr(r, "type"));
        rec_types[t]++;
        handle_of[k] = jhex(r, "handle");
        /* The parent is the handle the plugin returned for the log's parent. */
        uint64_t want = 0;
        for (size_t j = 0; j < k && ev[k].parent; j++)
            if (ev[j].addr == ev[k].parent)
                want = handle_of[j];
        cr_assert_eq(jhex(r, "parent"), want, "start %zu (%s): parent link", k, jstr(r, "type"));
        if (t == NSC_T_COLL)
            cr_assert_str_eq(jstr(r, "func"), "AllReduce");
        k++;
    }
    cr_assert_eq(k, nev);
    cr_assert_eq(rec_stops, nev, "every event stopped once");
    for (int t = 0; t < NSC_T_COUNT; t++)
        cr_assert_eq(rec_types[t], log_types[t], "type %s", nsc_type_name((unsigned)t));
    for (int s = 0; s < NSC_S_COUNT; s++)
        cr_assert_eq(rec_states[s], log_states[s], "state %s", nsc_state_name((unsigned)s));
    cr_assert_eq(log_types[NSC_T_KERNEL_CH], 100, "the log itself: 100 KernelCh");
    jlines_free(&log);
    jlines_free(&rec);
}

/* ---- every version's descriptors read back; record == summary ---- */

/* v: the record plugin's version; api: NCCL's (above v when chained). */
static void check_coll_fields(int api, int v, const nsc_json *r, uint64_t comm_id)
{
    cr_assert_eq(jnum(r, "seqNumber") < 2, 1);
    cr_assert_eq(jnum(r, "count"), 4096);
    cr_assert_eq(jnum(r, v <= 3 ? "nMaxChannels" : "nChannels"), 2, "v%d channels", v);
    if (v == 1) {
        cr_assert_eq(jnum(r, "func"), 4, "ncclFuncAllReduce");
        cr_assert_eq(jnum(r, "datatype"), 7, "ncclFloat32");
        cr_assert_eq(jnum(r, "algo"), 1, "RING");
        cr_assert_eq(jnum(r, "proto"), 2, "SIMPLE");
        cr_assert_eq(jnum(r, "trafficBytes"), api <= 2 ? 4096 * 4 : 0, "v3 dropped trafficBytes");
    } else {
        cr_assert_str_eq(jstr(r, "func"), "AllReduce");
        cr_assert_str_eq(jstr(r, "datatype"), "ncclFloat32");
        cr_assert_str_eq(jstr(r, "algo"), "RING");
        cr_assert_str_eq(jstr(r, "proto"), "SIMPLE");
    }
    if (v <= 3) {
        cr_assert_eq(jnum(r, "commHash"), comm_id);
        cr_assert_str_eq(jstr(r, "name"), "world");
    }
    if (v == 7) {
        cr_assert_str_eq(jstr(r, "kernelVariant"), "Default");
        cr_assert_eq(jnum(r, "userTag"), jnum(r, "seqNumber") + 1);
    }
}

static bool version_has(int v, int t)
{
    if (t == NSC_T_KERNEL_CH || t == NSC_T_NET_PLUGIN)
        return v >= 3;
    if (t >= NSC_T_GROUP_API && t <= NSC_T_KERNEL_LAUNCH)
        return v >= 5;
    if (t >= NSC_T_CE_COLL && t <= NSC_T_CE_BATCH)
        return v >= 6;
    if (t == NSC_T_KERNEL_PHASE)
        return v >= 7;
    return t < NSC_T_KERNEL_CH;
}

/* NCCL of version api drives the record plugin of version v: directly
 * (api == v), or through ncclscope chaining it (env names it). */
static void check_version_as(int api, int v, const char *env)
{
    const char *dir = tmpdir_new();
    char args[512];
    snprintf(args, sizeof args,
             "--api %d --scenario ring --nodes 2 --ranks-per-node 1 --iters 2 --count 4096 --channels 2 "
             "--kernel-phases --net-qps 2%s%s", api, env ? " --plugin " EMU_LIB_DIR : "",
             env ? "/libnccl-profiler-ncclscope.so" : "");
    cr_assert_eq(run_emu(dir, env, args), 0, "v%d through v%d", v, api);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    cr_assert_eq(ranks->count, 2);
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        char path[512];
        snprintf(path, sizeof path, "%s/rec-%llu.jsonl", dir, (unsigned long long)jnum(rk, "pid"));
        jlines rec = {0};
        jlines_read_file(path, &rec);
        uint64_t starts[NSC_T_COUNT] = {0}, stops = 0, states = 0, handles[MAXH], types[MAXH];
        size_t nh = 0;
        cr_assert_eq(jnum(rk, "api_version"), (uint64_t)api);
        for (size_t i = 0; i < rec.n; i++) {
            const nsc_json *r = nsc_json_root(&rec.docs[i]);
            const char *call = jstr(r, "call");
            if (strcmp(call, "init") == 0) {
                cr_assert_eq(jnum(r, "v"), (uint64_t)v);
                if (v >= 4) {
                    cr_assert_eq(jnum(r, "comm_id"), jnum(rk, "comm_id"));
                    cr_assert_eq(jnum(r, "nranks"), 2);
                    cr_assert_eq(jnum(r, "nnodes"), 2);
                    cr_assert_eq(jnum(r, "rank"), jnum(rk, "rank"));
                }
            } else if (strcmp(call, "stop") == 0)
                stops++;
            else if (strcmp(call, "state") == 0)
                states++;
            if (strcmp(call, "start") != 0)
                continue;
            int t = nsc_type_from_name(jstr(r, "type"));
            cr_assert(version_has(v, t), "v%d has no %s", v, jstr(r, "type"));
            cr_assert_eq(jnum(r, "type_bits"), 1ull << t, "type field");
            cr_assert_eq(jnum(r, "rank"), jnum(rk, "rank"));
            starts[t]++;
            handles[nh] = jhex(r, "handle");
            types[nh++] = (uint64_t)t;
            uint64_t parent = jhex(r, "parent");
            int ptype = -1;
            for (size_t j = 0; j < nh; j++)
                if (handles[j] == parent)
                    ptype = (int)types[j];
            if (t == NSC_T_COLL) {
                check_coll_fields(api, v, r, jnum(rk, "comm_id"));
                cr_assert_eq(ptype, v >= 5 ? NSC_T_COLL_API : NSC_T_GROUP, "v%d Coll parent", v);
                if (v >= 5) {
                    uint64_t pg = jhex(r, "parentGroup");
                    bool found = false;
                    for (size_t j = 0; j < nh; j++)
                        found |= handles[j] == pg && types[j] == NSC_T_GROUP;
                    cr_assert(found, "parentGroup is the Group");
                }
            } else if (t == NSC_T_PROXY_OP) {
                cr_assert_eq(ptype, NSC_T_COLL);
                cr_assert_eq(jnum(r, "pid_field"), jnum(rk, "pid"));
                cr_assert_eq(jnum(r, "peer"), 1 - jnum(rk, "rank"));
                cr_assert_eq(jnum(r, "chunkSize"), 131072);
                cr_assert_lt(jnum(r, "channelId"), 2);
                cr_assert_gt(jnum(r, "nSteps"), 0);
            } else if (t == NSC_T_PROXY_STEP)
                cr_assert_eq(ptype, NSC_T_PROXY_OP);
            else if (t == NSC_T_NET_PLUGIN) {
                cr_assert_eq(ptype, NSC_T_PROXY_STEP, "NetPlugin under its ProxyStep");
                cr_assert_eq(jnum(r, "id"), (1u << 16) | 1u, "IB net plugin, descriptor v1");
                cr_assert_neq(jhex(r, "data"), 0);
            } else if (t == NSC_T_KERNEL_PHASE) {
                cr_assert_eq(ptype, NSC_T_KERNEL_CH, "KernelPhase under its KernelCh");
                cr_assert_lt(jnum(r, "phaseId"), 3);
                static const char *const phases[] = {"initial_sync", "compute", "final_sync"};
                cr_assert_str_eq(jstr(r, "phaseName"), phases[jnum(r, "phaseId")]);
            } else if (t == NSC_T_KERNEL_CH) {
                cr_assert_eq(ptype, NSC_T_COLL);
                if (v >= 4) {
                    /* pTimer is one of the GPU samples the summary reports. */
                    const nsc_json *s = nsc_json_get(rk, "kernel_samples");
                    bool found = false;
                    uint64_t pt = jnum(r, "pTimer");
                    for (const nsc_json *p = nsc_json_first(s); p && !found; p = nsc_json_next(s, p)) {
                        uint64_t x;
                        nsc_json_u64(nsc_json_at(p, 0), &x);
                        found = x == pt;
                    }
                    cr_assert(found, "KernelCh pTimer %llu in the summary", (unsigned long long)pt);
                }
            }
        }
        /* The summary's counts are exactly what the plugin received. */
        const nsc_json *calls = nsc_json_get(rk, "calls");
        uint64_t sum_stops = 0, sum_states = 0;
        for (int t = 0; t < NSC_T_COUNT; t++) {
            if (!version_has(v, t)) {
                cr_assert_eq(starts[t], 0);
                continue;
            }
            cr_assert_eq(summary_count(calls, "start", nsc_type_name((unsigned)t)), starts[t], "v%d %s",
                         v, nsc_type_name((unsigned)t));
            sum_stops += summary_count(calls, "stop", nsc_type_name((unsigned)t));
            sum_states += summary_count(calls, "state", nsc_type_name((unsigned)t));
        }
        cr_assert_eq(sum_stops, stops);
        cr_assert_eq(sum_states, states);
        cr_assert_gt(starts[NSC_T_PROXY_OP], 0, "v%d: two nodes exchange data", v);
        if (v >= 3)
            cr_assert_eq(starts[NSC_T_NET_PLUGIN], 2 * starts[NSC_T_PROXY_STEP], "two QPs a step");
        cr_assert_eq(starts[NSC_T_KERNEL_PHASE], v >= 7 ? 3 * starts[NSC_T_KERNEL_CH] : 0);
        cr_assert_eq(jnum(rk, "open_events"), 0);
        jlines_free(&rec);
    }
    nsc_json_free(&sum);
}

static void check_version(int v)
{
    check_version_as(v, v, NULL);
}

Test(emu, every_version_reads_back_v1) { check_version(1); }
Test(emu, every_version_reads_back_v2) { check_version(2); }
Test(emu, every_version_reads_back_v3) { check_version(3); }
Test(emu, every_version_reads_back_v4) { check_version(4); }
Test(emu, every_version_reads_back_v5) { check_version(5); }
Test(emu, every_version_reads_back_v6) { check_version(6); }
Test(emu, every_version_reads_back_v7) { check_version(7); }

/* ncclscope served at version api chains the record plugin exporting
 * v1..v<api> (NCCLSCOPE_CHAIN): the record plugin gets, at its own version,
 * every event NCCL made of the types that version has, parents and fields
 * converted, as if NCCL drove it alone. ncclscope's own mask (the default)
 * lacks ProxyStep, NetPlugin and KernelPhase: those it keeps only for the
 * pairing. */
static void check_chain(int api)
{
    for (int v = 1; v <= api; v++) {
        char env[512];
        snprintf(env, sizeof env,
                 "NCCLSCOPE_FLUSH_MS=0 NCCLSCOPE_CHAIN=%s/libnccl-profiler-record%s%.0d.so",
                 EMU_LIB_DIR, v < 7 ? "-v" : "", v < 7 ? v : 0);
        check_version_as(api, v, env);
    }
}

Test(emu, chain_from_v3_to_every_older_version, .timeout = 60) { check_chain(3); }
Test(emu, chain_from_v4_to_every_older_version, .timeout = 60) { check_chain(4); }
Test(emu, chain_from_v5_to_every_older_version, .timeout = 60) { check_chain(5); }
Test(emu, chain_from_v6_to_every_older_version, .timeout = 60) { check_chain(6); }
Test(emu, chain_from_v7_to_every_older_version, .timeout = 60) { check_chain(7); }

/* ---- PXN ---- */

Test(emu, pxn_foreign_addresses_fault_in_the_proxy_process, .timeout = 30)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, "--scenario pxn --nodes 2 --ranks-per-node 2 --iters 2 --pxn-probe"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    cr_assert_eq(ranks->count, 4);
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        const nsc_json *pxn = nsc_json_get(rk, "pxn");
        cr_assert_gt(jnum(pxn, "guarded"), 0);
        cr_assert_eq(jnum(pxn, "unguarded"), 0);
        cr_assert_gt(jnum(pxn, "probed"), 0);
        cr_assert_eq(jnum(pxn, "probe_segv"), jnum(pxn, "probed"), "every probe died of SIGSEGV");
        cr_assert_gt(summary_count(nsc_json_get(rk, "foreign"), "start", "ProxyOp"), 0);
        cr_assert_eq(summary_count(nsc_json_get(rk, "calls"), "start", "ProxyOp"), 0);
    }
    /* In the record: each ProxyOp came from another process with that
     * process's pid, and a context this process never created. */
    jlines rec = {0};
    jlines_read_dir(dir, &rec);
    size_t foreign = 0;
    for (size_t i = 0; i < rec.n; i++) {
        const nsc_json *r = nsc_json_root(&rec.docs[i]);
        if (strcmp(jstr(r, "type"), "ProxyOp") != 0)
            continue;
        cr_assert_neq(jnum(r, "pid_field"), jnum(r, "pid"));
        for (size_t j = 0; j < rec.n; j++) {
            const nsc_json *q = nsc_json_root(&rec.docs[j]);
            if (strcmp(jstr(q, "call"), "init") == 0 && jnum(q, "pid") == jnum(r, "pid"))
                cr_assert_neq(jhex(q, "ctx"), jhex(r, "ctx"));
        }
        foreign++;
    }
    cr_assert_gt(foreign, 0);
    jlines_free(&rec);
    nsc_json_free(&sum);
}

/* Through ncclscope (NCCLSCOPE_CHAIN): the proxy process's record plugin gets
 * each foreign ProxyOp with the foreign context as NCCL passed it and no
 * parent (another process's handle cannot be paired), and its ProxySteps
 * under its own handle of that ProxyOp. */
Test(emu, chain_pxn_keeps_the_foreign_context_and_pairs_the_steps, .timeout = 30)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, "NCCLSCOPE_FLUSH_MS=0 NCCLSCOPE_CHAIN=" EMU_LIB_DIR "/libnccl-profiler-record.so",
                         "--scenario pxn --nodes 2 --ranks-per-node 2 --iters 2 --plugin " EMU_LIB_DIR
                         "/libnccl-profiler-ncclscope.so"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    uint64_t want = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk))
        want += summary_count(nsc_json_get(rk, "foreign"), "start", "ProxyOp");
    cr_assert_gt(want, 0);
    jlines rec = {0};
    jlines_read_dir(dir, &rec);
    uint64_t ops[MAXH];
    size_t foreign = 0, steps = 0;
    for (size_t i = 0; i < rec.n; i++) {
        const nsc_json *r = nsc_json_root(&rec.docs[i]);
        if (strcmp(jstr(r, "call"), "start") != 0)
            continue;
        if (strcmp(jstr(r, "type"), "ProxyStep") == 0) {
            for (size_t j = 0; j < foreign; j++)
                steps += ops[j] == jhex(r, "parent");
            continue;
        }
        if (strcmp(jstr(r, "type"), "ProxyOp") != 0 || jnum(r, "pid_field") == jnum(r, "pid"))
            continue;
        for (size_t j = 0; j < rec.n; j++) {
            const nsc_json *q = nsc_json_root(&rec.docs[j]);
            if (strcmp(jstr(q, "call"), "init") == 0 && jnum(q, "pid") == jnum(r, "pid"))
                cr_assert_neq(jhex(q, "ctx"), jhex(r, "ctx"), "a context of another process");
        }
        cr_assert_eq(jhex(r, "parent"), 0);
        cr_assert_lt(foreign, MAXH);
        ops[foreign++] = jhex(r, "handle");
    }
    cr_assert_eq(foreign, want);
    cr_assert_gt(steps, 0, "steps under the record plugin's own foreign ProxyOp");
    jlines_free(&rec);
    nsc_json_free(&sum);
}

/* ---- NCCL quirks (--nccl-quirk) ---- */

/* Every quirk at once, as the plugin receives them: API events of rank 1 with
 * rank 0, KernelCh timers 0 on channel 1 (start and KernelChStop), ProxyOp and
 * KernelCh without a parent, each ProxyOp's last step never stopped; channel
 * 0's timers untouched. */
Test(emu, nccl_quirks_reach_the_plugin_as_nccl_makes_them, .timeout = 30)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, "--api 7 --scenario ring --nodes 2 --ranks-per-node 1 --iters 2 "
                         "--channels 2 --nccl-quirk api-rank0 --nccl-quirk zero-gpu-timer "
                         "--nccl-quirk null-parent --nccl-quirk unpaired-steps"), 0);
    jlines rec = {0};
    jlines_read_dir(dir, &rec);
    /* A handle is an address, unique only among its process's open events (a
     * freed one comes back, and without ASLR, as under qemu, another process
     * uses the same): each call is matched to the start open in its process.
     * kind 1: a KernelCh with its timers 0, 2: a ProxyStep. */
    static struct { uint64_t pid, h; int kind; } open[MAXH];
    size_t nopen = 0, nzero = 0, api = 0, kch0 = 0, children = 0, stops = 0, ops = 0, steps = 0,
           step_stops = 0;
    for (size_t i = 0; i < rec.n; i++) {
        const nsc_json *r = nsc_json_root(&rec.docs[i]);
        const char *call = jstr(r, "call");
        uint64_t pid = (uint64_t)jnum(r, "pid"), h = jhex(r, "handle");
        size_t at = 0;
        while (at < nopen && (open[at].pid != pid || open[at].h != h))
            at++;
        if (strcmp(call, "state") == 0 && jnum(r, "state") == NSC_S_KERNEL_CH_STOP && at < nopen &&
            open[at].kind == 1) {
            cr_assert_eq(jnum(r, "pTimer"), 0);
            stops++;
        } else if (strcmp(call, "stop") == 0 && at < nopen) {
            step_stops += open[at].kind == 2;
            open[at] = open[--nopen];
        }
        if (strcmp(call, "start") != 0)
            continue;
        if (at < nopen)  /* its handle came back: that event was never stopped */
            open[at] = open[--nopen];
        int t = nsc_type_from_name(jstr(r, "type")), kind = 0;
        if (t >= NSC_T_GROUP_API && t <= NSC_T_KERNEL_LAUNCH) {
            cr_assert_eq(jnum(r, "rank"), 0, "%s", jstr(r, "type"));
            api++;
        } else if (t == NSC_T_PROXY_OP || t == NSC_T_KERNEL_CH) {
            cr_assert_eq(jhex(r, "parent"), 0);
            children++;
        }
        ops += t == NSC_T_PROXY_OP;
        if (t == NSC_T_PROXY_STEP) {
            steps++;
            kind = 2;
        }
        if (t == NSC_T_KERNEL_CH && jnum(r, "channelId") > 0) {
            cr_assert_eq(jnum(r, "pTimer"), 0);
            nzero++;
            kind = 1;
        } else if (t == NSC_T_KERNEL_CH) {
            cr_assert_neq(jnum(r, "pTimer"), 0);
            kch0++;
        }
        if (kind) {
            cr_assert_lt(nopen, MAXH);
            open[nopen].pid = pid, open[nopen].h = h, open[nopen++].kind = kind;
        }
    }
    cr_assert_gt(api, 0);
    cr_assert_gt(children, 0);
    cr_assert_eq(nzero, kch0, "as many channel-1 as channel-0 kernels");
    cr_assert_eq(stops, nzero);
    cr_assert_gt(ops, 0);
    cr_assert_eq(steps - step_stops, ops, "every ProxyOp's last step never stopped");
    jlines_free(&rec);
}

/* drifting-kernelch (NCCL 2.29's AllGatherV path): a Broadcast's task has no
 * KernelCh, and after each Broadcast the proxy reads an older slot of the
 * channel's timer ring. The device runs AllReduce n and Broadcast n in
 * turn, each writing a start and a stop timer on the one channel (the
 * summary's samples, in the order the device wrote them), so AllReduce n's
 * own start is the 4n-th timer; the host counted only the n AllReduces
 * before it, so its KernelCh reads the start of the n-th task the device
 * ran, the 2n-th timer: its own for the first, an older task's for every
 * later one, however late the device ran them. Two ranks: a one-rank
 * collective takes no modelled time (docs/emulator.md, known differences). */
Test(emu, drifting_kernelch_reads_older_tasks_timers, .timeout = 30)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, "--api 7 --nodes 1 --ranks-per-node 2 --iters 4 --channels 1 "
                         "--also-func Broadcast --nccl-quirk drifting-kernelch"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *rk = nsc_json_at(nsc_json_get(nsc_json_root(&sum), "ranks"), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/rec-%llu.jsonl", dir, (unsigned long long)jnum(rk, "pid"));
    const nsc_json *samples = nsc_json_get(rk, "kernel_samples");
    static uint64_t timers[64];
    size_t ntimers = 0;
    for (const nsc_json *k = nsc_json_first(samples); k; k = nsc_json_next(samples, k)) {
        cr_assert_lt(ntimers, 64);  /* a sample: [timer, its true time] */
        cr_assert_eq(nsc_json_u64(nsc_json_first(k), &timers[ntimers++]), 0);
    }
    cr_assert_eq(ntimers, 16, "a start and a stop timer of 8 tasks");
    jlines rec = {0};
    jlines_read_file(path, &rec);
    static uint64_t bcast[64];
    size_t nbcast = 0, nkch = 0;
    for (size_t i = 0; i < rec.n; i++) {
        const nsc_json *r = nsc_json_root(&rec.docs[i]);
        if (strcmp(jstr(r, "call"), "start") != 0)
            continue;
        int t = nsc_type_from_name(jstr(r, "type"));
        if (t == NSC_T_COLL && strcmp(jstr(r, "func"), "Broadcast") == 0) {
            cr_assert_lt(nbcast, 64);
            bcast[nbcast++] = jhex(r, "handle");
        }
        if (t != NSC_T_KERNEL_CH)
            continue;
        for (size_t b = 0; b < nbcast; b++)
            cr_assert_neq(jhex(r, "parent"), bcast[b], "a KernelCh under a Broadcast");
        size_t place = 0;
        while (place < ntimers && timers[place] != jnum(r, "pTimer"))
            place++;
        cr_assert_lt(place, ntimers, "AllReduce %zu: its timer is none the device wrote", nkch);
        cr_assert_eq(place, 2 * nkch, "AllReduce %zu's KernelCh reads timer %zu of the device's, not the %zu-th task's start",
                     nkch, place, nkch);
        nkch++;
    }
    cr_assert_eq(nkch, 4, "one KernelCh per AllReduce");
    jlines_free(&rec);
    nsc_json_free(&sum);
}

/* ---- faults ---- */

Test(emu, killed_rank_reports_exactly_what_it_emitted, .timeout = 30)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, "--scenario kill --nodes 2 --ranks-per-node 1 --iters 3 --kill-after 1"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *root = nsc_json_root(&sum);
    const nsc_json *victim = nsc_json_at(nsc_json_get(root, "processes"), 1);
    cr_assert_eq(jnum(victim, "signal"), 9);
    const nsc_json *rk = nsc_json_at(nsc_json_get(root, "ranks"), 1);
    char path[512];
    snprintf(path, sizeof path, "%s/rec-%llu.jsonl", dir, (unsigned long long)jnum(rk, "pid"));
    jlines rec = {0};
    jlines_read_file(path, &rec);
    uint64_t starts = 0, stops = 0;
    for (size_t i = 0; i < rec.n; i++) {
        const char *call = jstr(nsc_json_root(&rec.docs[i]), "call");
        starts += strcmp(call, "start") == 0;
        stops += strcmp(call, "stop") == 0;
        cr_assert_str_neq(call, "finalize", "a killed process never finalizes");
    }
    const nsc_json *calls = nsc_json_get(rk, "calls");
    uint64_t s_starts = 0, s_stops = 0;
    for (int t = 0; t < NSC_T_COUNT; t++) {
        s_starts += summary_count(calls, "start", nsc_type_name((unsigned)t));
        s_stops += summary_count(calls, "stop", nsc_type_name((unsigned)t));
    }
    cr_assert_eq(s_starts, starts);
    cr_assert_eq(s_stops, stops);
    cr_assert_eq(jnum(rk, "open_events"), starts - stops);
    cr_assert_gt(jnum(rk, "open_events"), 0, "killed inside a group");
    jlines_free(&rec);
    nsc_json_free(&sum);
}

Test(emu, hung_rank_stops_and_the_others_stay_open, .timeout = 30)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, "--scenario hang --nodes 1 --ranks-per-node 3 --iters 4 --hang-after 2 --hang-ms 50"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        const nsc_json *seq = nsc_json_get(nsc_json_get(rk, "seq"), "AllReduce");
        bool hung = jnum(rk, "rank") == 2;
        cr_assert_eq(seq->count, hung ? 2 : 3, "rank %llu", (unsigned long long)jnum(rk, "rank"));
        cr_assert_eq(jnum(rk, "open_events"), hung ? 0 : 2, "the hung collective's channels stay open");
    }
    nsc_json_free(&sum);
}

/* NCCL bounds the events a rank holds open with states only by what is in
 * flight: each rank of a 32-rank AlltoAll on 4 nodes at 2 channels holds a
 * ProxyOp and a ProxyStep open per channel and remote send or receive (96
 * legs, 192 events). Before, the emulator kept at most 32 and every rank
 * died. A process per node: the ranks' sets are theirs all the same. */
Test(emu, alltoall_of_32_ranks_at_2_channels_ends_every_op, .timeout = 120)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, "--scenario alltoall --nodes 4 --ranks-per-node 8 --ranks-as threads "
                                    "--channels 2 --iters 2"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    int n = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk), n++) {
        unsigned long long rank = (unsigned long long)jnum(rk, "rank");
        const nsc_json *c = nsc_json_get(rk, "collectives");
        for (uint32_t i = 0; i < 2 * 64; i++)
            cr_assert_gt(jnum(nsc_json_at(c, i), "end_ns"), 0, "rank %llu's op %u never ended", rank, i);
        cr_assert_eq(summary_count(nsc_json_get(rk, "calls"), "stop", "ProxyOp"), 2 * 96, "rank %llu", rank);
        cr_assert_eq(jnum(rk, "open_events"), 0, "rank %llu", rank);
        cr_assert_eq(jnum(rk, "open_states"), 0, "rank %llu", rank);
    }
    cr_assert_eq(n, 32);
    nsc_json_free(&sum);
}

/* ---- loading ---- */

Test(emu, init_failure_unloads_and_none_disables)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, "NCCLSCOPE_TEST_RECORD_FAIL_INIT=1", "--ranks-per-node 1"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *root = nsc_json_root(&sum);
    cr_assert_eq(jnum(nsc_json_get(root, "totals"), "profiled_ranks"), 0);
    const nsc_json *rk = nsc_json_at(nsc_json_get(root, "ranks"), 0);
    cr_assert_eq(nsc_json_get(rk, "profiled")->kind, NSC_JSON_FALSE);
    cr_assert_eq(nsc_json_get(nsc_json_get(rk, "calls"), "start")->count, 0);
    jlines rec = {0};
    jlines_read_dir(dir, &rec);
    cr_assert_eq(rec.n, 1, "only the failed init was seen");
    cr_assert_str_eq(jstr(nsc_json_root(&rec.docs[0]), "call"), "init_fail");
    jlines_free(&rec);
    nsc_json_free(&sum);

    dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, "--ranks-per-node 1 --plugin NoNe"), 0);
    sum = summary_read(dir);
    cr_assert_eq(jnum(nsc_json_get(nsc_json_root(&sum), "totals"), "profiled_ranks"), 0);
    nsc_json_free(&sum);
}

Test(emu, split_gives_child_communicators_their_own_init)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, "--scenario split --ranks-per-node 4 --iters 4"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    cr_assert_eq(ranks->count, 8, "4 world ranks + 4 child ranks");
    uint64_t world = jnum(nsc_json_at(ranks, 0), "comm_id");
    int children = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        if (jnum(rk, "comm_id") == world)
            continue;
        children++;
        cr_assert_eq(jnum(rk, "nranks"), 2);
        cr_assert_eq(nsc_json_get(nsc_json_get(rk, "seq"), "AllReduce")->count, 2);
    }
    cr_assert_eq(children, 4);
    nsc_json_free(&sum);
}

/* ---- clocks ---- */

Test(emu, clock_shim_skews_the_plugin_clock_exactly_as_documented)
{
    const char *dir = tmpdir_new();
    int64_t off = 7000000000LL;
    cr_assert_eq(run_emu(dir, NULL, "--ranks-per-node 1 --iters 2 --node-clock 0=7000000000:250"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *root = nsc_json_root(&sum);
    uint64_t epoch = jnum(root, "epoch_ns");
    const nsc_json *nc = nsc_json_at(nsc_json_get(root, "node_clocks"), 0);
    cr_assert_eq(jnum(nc, "drift_ppb"), 250000);
    const nsc_json *rk = nsc_json_at(nsc_json_get(root, "ranks"), 0);
    const nsc_json *colls = nsc_json_get(rk, "collectives");
    jlines rec = {0};
    jlines_read_dir(dir, &rec);
    size_t c = 0;
    for (size_t i = 0; i < rec.n; i++) {
        const nsc_json *r = nsc_json_root(&rec.docs[i]);
        if (strcmp(jstr(r, "type"), "Coll") != 0)
            continue;
        const nsc_json *col = nsc_json_at(colls, (uint32_t)c++);
        /* skewed(t) = t + off + (t - epoch) * ppb / 1e9, truncated */
        __int128 t0 = jnum(col, "start_ns"), t1 = jnum(col, "stop_ns");
        uint64_t lo = (uint64_t)(t0 + off + (t0 - epoch) * 250000 / 1000000000);
        uint64_t hi = (uint64_t)(t1 + off + (t1 - epoch) * 250000 / 1000000000);
        cr_assert(jnum(r, "ts") >= lo && jnum(r, "ts") <= hi, "plugin time inside the skewed call");
    }
    cr_assert_eq(c, 2);
    jlines_free(&rec);
    nsc_json_free(&sum);
}

/* The clock floor (docs/emulator-model.md, "Events at their times"): on the thread
 * that set it, the shim's clocks read as at the floor while it is ahead of
 * real time (skewed like any reading), at real time once it is behind or 0;
 * other threads never see it. The shim is opened here, not preloaded, and
 * called through its own symbols. */
typedef int (*shim_gettime_fn)(clockid_t, struct timespec *);

static uint64_t read_ns(shim_gettime_fn f, clockid_t id)
{
    struct timespec ts;
    cr_assert_eq(f(id, &ts), 0);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *read_on_another_thread(void *f)
{
    return (void *)(uintptr_t)read_ns((shim_gettime_fn)f, CLOCK_MONOTONIC);
}

Test(emu, clock_shim_floor_moves_only_its_threads_clocks)
{
    setenv("NCCLSCOPE_TEST_CLOCK_OFFSET_NS", "3000", 1); /* read by the shim's constructor */
    void *h = dlopen(EMU_LIB_DIR "/libnsc-clockshim.so", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    shim_gettime_fn shim = (shim_gettime_fn)dlsym(h, "clock_gettime");
    void (*set_floor)(uint64_t) = (void (*)(uint64_t))dlsym(h, "emu_clockshim_floor");
    cr_assert(shim && set_floor);
    uint64_t before = read_ns(clock_gettime, CLOCK_MONOTONIC);
    uint64_t floor = before + 10000000000ull;
    uint64_t wall = read_ns(clock_gettime, CLOCK_REALTIME);
    set_floor(floor);
    cr_assert_eq(read_ns(shim, CLOCK_MONOTONIC), floor + 3000, "the floor, skewed");
    /* the shim moves REALTIME by the floor's lead over its own MONOTONIC read,
     * which comes microseconds after `before` (more under qemu-user): 1 ms
     * for the reads in between */
    cr_assert_geq(read_ns(shim, CLOCK_REALTIME), wall + 10000000000ull - 1000000, "the other clocks move with it");
    pthread_t t;
    void *other;
    cr_assert_eq(pthread_create(&t, NULL, read_on_another_thread, (void *)shim), 0);
    pthread_join(t, &other);
    uint64_t after = read_ns(clock_gettime, CLOCK_MONOTONIC);
    cr_assert((uint64_t)(uintptr_t)other >= before + 3000 && (uint64_t)(uintptr_t)other <= after + 3000,
              "another thread reads real time");
    set_floor(before); /* behind real time: real time */
    uint64_t real = read_ns(shim, CLOCK_MONOTONIC);
    cr_assert(real >= after + 3000 && real <= read_ns(clock_gettime, CLOCK_MONOTONIC) + 3000);
    set_floor(0);
    uint64_t unset = read_ns(shim, CLOCK_MONOTONIC);
    cr_assert_leq(unset, read_ns(clock_gettime, CLOCK_MONOTONIC) + 3000, "no floor: real time");
    dlclose(h);
}

/* A thread's due time (docs/emulator-model.md, "A machine's pauses"): the
 * first read after it returns exactly that time (1 ns past the latest time
 * the thread read, if that is later) and fixes the thread's trail; later
 * reads (the shim's and the emulator's own stamps alike) trail real time by
 * as much, up to the ceiling, never before the floor; a thread due ahead of
 * real time has no trail; a thread that begins is due then, whatever it
 * read before. */
Test(emu, clock_shim_due_time_reads_exactly_then_trails_up_to_its_ceiling)
{
    void *h = dlopen(EMU_LIB_DIR "/libnsc-clockshim.so", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    shim_gettime_fn shim = (shim_gettime_fn)dlsym(h, "clock_gettime");
    void (*set_floor)(uint64_t) = (void (*)(uint64_t))dlsym(h, "emu_clockshim_floor");
    void (*due)(uint64_t, uint64_t) = (void (*)(uint64_t, uint64_t))dlsym(h, "emu_clockshim_due");
    uint64_t (*now)(void) = (uint64_t (*)(void))dlsym(h, "emu_clockshim_now");
    void (*begin)(uint64_t) = (void (*)(uint64_t))dlsym(h, "emu_clockshim_begin");
    cr_assert(shim && set_floor && due && now && begin);
    const uint64_t ms = 1000000;
    uint64_t before = read_ns(clock_gettime, CLOCK_MONOTONIC);
    due(before - 50 * ms, 10 * ms);
    uint64_t first = read_ns(shim, CLOCK_MONOTONIC);
    cr_assert_eq(first, before - 50 * ms, "the due time, exactly");
    uint64_t second = read_ns(shim, CLOCK_MONOTONIC), after = read_ns(clock_gettime, CLOCK_MONOTONIC);
    cr_assert(second >= first && second <= after - 50 * ms, "then 50 ms or more behind real time");
    uint64_t stamp = now();
    cr_assert(stamp >= second && stamp <= before - 40 * ms, "the emulator's stamp too, up to the ceiling");
    due(before - 60 * ms, 0);
    cr_assert_eq(read_ns(shim, CLOCK_MONOTONIC), stamp + 1, "1 ns past a time read already");
    cr_assert_eq(read_ns(shim, CLOCK_MONOTONIC), stamp + 1, "no further than the ceiling");
    set_floor(after + 1000 * ms);
    cr_assert_eq(read_ns(shim, CLOCK_MONOTONIC), after + 1000 * ms, "never before the floor");
    set_floor(0);
    uint64_t ahead = read_ns(clock_gettime, CLOCK_MONOTONIC);
    due(ahead + 2000 * ms, 0);
    uint64_t real = read_ns(shim, CLOCK_MONOTONIC);
    cr_assert(real >= ahead && real <= read_ns(clock_gettime, CLOCK_MONOTONIC), "due ahead: real time");
    begin(before);
    cr_assert_eq(read_ns(shim, CLOCK_MONOTONIC), before, "a thread that begins forgets what it read");
    cr_assert_eq(read_ns(shim, CLOCK_MONOTONIC), before, "and takes no time of its own");
    dlclose(h);
}

/* ---- copy engine, mask per operation, graph replays ---- */

static uint64_t type_count(const nsc_json *rk, const char *kind, int t)
{
    return summary_count(nsc_json_get(rk, "calls"), kind, nsc_type_name((unsigned)t));
}

static void check_ce(int v)
{
    const char *dir = tmpdir_new();
    char args[256];
    snprintf(args, sizeof args, "--api %d --ce --func AllGather --ranks-per-node 2 --iters 3", v);
    cr_assert_eq(run_emu(dir, NULL, args), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        cr_assert_eq(type_count(rk, "stop", NSC_T_CE_COLL), v >= 6 ? 3 : 0, "v%d", v);
        cr_assert_eq(type_count(rk, "stop", NSC_T_CE_SYNC), v >= 6 ? 6 : 0);
        cr_assert_eq(type_count(rk, "stop", NSC_T_CE_BATCH), v >= 6 ? 3 : 0);
        cr_assert_eq(type_count(rk, "stop", NSC_T_COLL_API), 3, "the API call is seen in any case");
        cr_assert_eq(type_count(rk, "start", NSC_T_COLL) + type_count(rk, "start", NSC_T_KERNEL_LAUNCH) +
                         type_count(rk, "start", NSC_T_GROUP), 0, "a CE plan has no kernel and no task");
    }
    jlines rec = {0};
    jlines_read_dir(dir, &rec);
    uint64_t api = 0, ce = 0, ce_seq_next = 0;
    bool complete = false;
    for (size_t i = 0; i < rec.n; i++) {
        const nsc_json *r = nsc_json_root(&rec.docs[i]);
        if (strcmp(jstr(r, "call"), "start") != 0 || jnum(r, "rank") != 0)
            continue;
        const char *t = jstr(r, "type");
        if (strcmp(t, "CollApi") == 0)
            api = jhex(r, "handle");
        else if (strcmp(t, "CeColl") == 0) {
            cr_assert_eq(jhex(r, "parent"), api, "CeColl under its CollApi");
            cr_assert_eq(jnum(r, "ceSeqNum"), ce_seq_next, "two syncs per collective");
            cr_assert_eq(jnum(r, "seqNumber"), jnum(r, "ceSeqNum"));
            cr_assert_str_eq(jstr(r, "func"), "AllGather");
            cr_assert_str_eq(jstr(r, "syncStrategy"), "UC");
            ce = jhex(r, "handle");
            ce_seq_next += 2;
        } else if (strcmp(t, "CeSync") == 0 || strcmp(t, "CeBatch") == 0) {
            cr_assert_eq(jhex(r, "parent"), ce);
            if (t[2] == 'S') {
                cr_assert_eq(nsc_json_get(r, "isComplete")->kind == NSC_JSON_TRUE, complete);
                complete = !complete;
                cr_assert_eq(jnum(r, "nRanks"), 2);
            } else {
                cr_assert_eq(jnum(r, "numOps"), 2);
                cr_assert_eq(jnum(r, "totalBytes"), 2 * 65536 * 4);
            }
        }
    }
    cr_assert_eq(ce_seq_next, v >= 6 ? 6 : 0);
    jlines_free(&rec);
    nsc_json_free(&sum);
}

Test(emu, ce_collectives_v5) { check_ce(5); }
Test(emu, ce_collectives_v6) { check_ce(6); }
Test(emu, ce_collectives_v7) { check_ce(7); }

/* The record plugin clears the mask at the Coll's start: NCCL sampled it at
 * GroupApi start, so that operation still gets all its children (KernelCh,
 * ProxyOp, ...), and only the next operation sees the new mask. */
Test(emu, mask_is_frozen_per_operation, .timeout = 30)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, "NCCLSCOPE_TEST_RECORD_MASK_AT=coll:0",
                         "--api 7 --scenario ring --nodes 2 --ranks-per-node 1 --iters 3"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        cr_assert_eq(type_count(rk, "start", NSC_T_GROUP_API), 1, "later groups see mask 0");
        cr_assert_eq(type_count(rk, "start", NSC_T_COLL), 1);
        cr_assert_eq(type_count(rk, "start", NSC_T_KERNEL_CH), 2, "the first op keeps its mask");
        cr_assert_eq(type_count(rk, "start", NSC_T_PROXY_OP), 4);
        cr_assert_eq(type_count(rk, "stop", NSC_T_PROXY_STEP), type_count(rk, "start", NSC_T_PROXY_STEP));
        cr_assert_gt(type_count(rk, "start", NSC_T_NET_PLUGIN), 0);
    }
    nsc_json_free(&sum);
}

/* A captured graph: API events and the kernel launch once; then at each
 * replay NCCL's host callback, on a thread of CUDA's, starts Group and Coll
 * (parent: the captured CollApi), the children follow, and seqNumber advances
 * because KernelCh is in the mask (as NCCL 2.28.9 did on a GPU:
 * tests/data/nccl-traces/gpu-check-2rank-nccl2.28.9). */
Test(emu, graph_replays_run_the_plans_task_events, .timeout = 30)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, "--api 6 --scenario graph --nodes 2 --ranks-per-node 1 --iters 3"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        cr_assert_eq(type_count(rk, "start", NSC_T_GROUP_API), 1);
        cr_assert_eq(type_count(rk, "start", NSC_T_COLL_API), 1);
        cr_assert_eq(type_count(rk, "start", NSC_T_KERNEL_LAUNCH), 1);
        cr_assert_eq(type_count(rk, "start", NSC_T_GROUP), 3);
        cr_assert_eq(type_count(rk, "start", NSC_T_COLL), 3);
        cr_assert_eq(type_count(rk, "start", NSC_T_KERNEL_CH), 6);
        const nsc_json *seq = nsc_json_get(nsc_json_get(rk, "seq"), "AllReduce");
        cr_assert_eq(seq->count, 3);
        cr_assert_eq(jnum(rk, "open_events"), 0);
    }
    jlines rec = {0};
    jlines_read_dir(dir, &rec);
    uint64_t api = 0, api_tid = 0, colls = 0;
    for (size_t i = 0; i < rec.n; i++) {
        const nsc_json *r = nsc_json_root(&rec.docs[i]);
        if (strcmp(jstr(r, "call"), "start") != 0 || jnum(r, "rank") != 0)
            continue;
        if (strcmp(jstr(r, "type"), "CollApi") == 0) {
            api = jhex(r, "handle");
            api_tid = jnum(r, "tid");
            cr_assert_eq(nsc_json_get(r, "graphCaptured")->kind, NSC_JSON_TRUE);
        } else if (strcmp(jstr(r, "type"), "Coll") == 0) {
            cr_assert_eq(jhex(r, "parent"), api, "every replay's Coll names the captured CollApi");
            cr_assert_neq(jnum(r, "tid"), api_tid, "replays run on CUDA's callback thread");
            cr_assert_eq(jnum(r, "seqNumber"), colls++);
        }
    }
    cr_assert_eq(colls, 3);
    jlines_free(&rec);

    /* Without KernelCh in the mask NCCL does not count replays: the number repeats. */
    dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, "NCCLSCOPE_TEST_RECORD_MASK=coll,collapi,groupapi,group",
                         "--api 6 --scenario graph --ranks-per-node 1 --iters 3"), 0);
    nsc_json_doc s2 = summary_read(dir);
    const nsc_json *rk = nsc_json_at(nsc_json_get(nsc_json_root(&s2), "ranks"), 0);
    const nsc_json *seq = nsc_json_get(nsc_json_get(rk, "seq"), "AllReduce");
    cr_assert_eq(seq->count, 3);
    for (const nsc_json *x = nsc_json_first(seq); x; x = nsc_json_next(seq, x)) {
        uint64_t v;
        nsc_json_u64(x, &v);
        cr_assert_eq(v, 0);
    }
    nsc_json_free(&s2);
    nsc_json_free(&sum);
}

/* A new log DIR/NAME to replay; its path in log. */
static FILE *log_new(const char *dir, const char *name, char *log, size_t cap)
{
    snprintf(log, cap, "%s/%s", dir, name);
    FILE *f = fopen(log, "w");
    cr_assert_not_null(f);
    return f;
}

/* Its ProfilerInit line of comm's rank, at ts us, from process pid. */
static void log_init(FILE *f, int comm, int rank, int nranks, int ts, int pid)
{
    fprintf(f, "{\"type\":\"ProfilerLifecycle\",\"func\":\"ProfilerInit\",\"commId\":%d,\"rank\":%d,"
               "\"start\":{\"ts\":%d.0,\"pid\":%d,\"tid\":%d},\"details\":{\"nranks\":%d}}\n",
            comm, rank, ts, pid, pid, nranks);
}

/* A log of several processes is refused, not replayed into one process. */
Test(emu, replay_refuses_a_log_of_several_processes)
{
    const char *dir = tmpdir_new();
    char log[600], args[700];
    FILE *f = log_new(dir, "two.jsonl", log, sizeof log);
    for (int pid = 100; pid <= 101; pid++)
        log_init(f, 1, pid - 100, 2, 1, pid);
    fclose(f);
    snprintf(args, sizeof args, "--replay %s --speed 0 2>%s/err", log, dir);
    int rc = run_emu(dir, NULL, args);
    cr_assert_neq(rc, 0);
    snprintf(args, sizeof args, "grep -q 'several processes' %s/err", dir);
    cr_assert_eq(system(args), 0, "the error names the reason");
}

/* NCCL makes no call on a communicator after its finalize: a log whose
 * event gets a state and its stop after its communicator finalized (another
 * one still open) replays to its end, and the plugin gets neither call. */
Test(emu, replay_drops_calls_after_their_finalize, .timeout = 30)
{
    const char *dir = tmpdir_new();
    char log[600], args[700];
    FILE *f = log_new(dir, "late.jsonl", log, sizeof log);
    for (int comm = 7; comm <= 8; comm++)
        log_init(f, comm, 0, 1, comm - 6, 100);
    fputs("{\"recordType\":\"event\",\"type\":\"ncclProfileGroupApi\",\"commId\":7,\"rank\":0,"
          "\"start\":{\"ts\":3.0,\"pid\":100,\"tid\":100},\"stop\":{\"ts\":7.0,\"pid\":100,\"tid\":100},"
          "\"eventAddr\":\"0x1000\",\"details\":{\"depth\":1}}\n"
          "{\"type\":\"ProfilerLifecycle\",\"func\":\"ProfilerFinalize\",\"commId\":7,\"rank\":0,"
          "\"start\":{\"ts\":4.0,\"pid\":100,\"tid\":100}}\n"
          "{\"recordType\":\"state\",\"eventAddr\":\"0x1000\",\"ts\":5.0,\"id\":23,\"pid\":100,\"tid\":100}\n",
          f);
    fclose(f);
    snprintf(args, sizeof args, "--replay %s --speed 0", log);
    cr_assert_eq(run_emu(dir, NULL, args), 0);
    jlines rec = {0};
    jlines_read_dir(dir, &rec);
    size_t starts = 0;
    for (size_t i = 0; i < rec.n; i++) {
        const char *call = jstr(nsc_json_root(&rec.docs[i]), "call");
        starts += strcmp(call, "start") == 0;
        cr_assert(strcmp(call, "state") && strcmp(call, "stop"), "line %zu: a %s after the finalize", i, call);
    }
    cr_assert_eq(starts, 1, "the event was started");
    jlines_free(&rec);
}

/* The empty plugin is the benchmarks' baseline: it must get every call a real
 * plugin gets (NCCL skips stop and state for NULL handles), so its job makes
 * the record plugin's calls, type by type (ProxyCtrl aside: how often the proxy
 * sleeps depends on timing). */
Test(emu, empty_plugin_gets_the_calls_of_a_real_plugin, .timeout = 30)
{
    const char *args = "--scenario ring --nodes 2 --ranks-per-node 1 --channels 2 --iters 3";
    const char *rec_dir = tmpdir_new();
    cr_assert_eq(run_emu(rec_dir, NULL, args), 0);
    nsc_json_doc rec = summary_read(rec_dir);
    char empty_args[256];
    snprintf(empty_args, sizeof empty_args, "%s --plugin empty --mask all", args);
    const char *empty_dir = tmpdir_new();
    cr_assert_eq(run_emu(empty_dir, NULL, empty_args), 0);
    nsc_json_doc empty = summary_read(empty_dir);
    const nsc_json *rc = nsc_json_get(nsc_json_get(nsc_json_root(&rec), "totals"), "calls");
    const nsc_json *ec = nsc_json_get(nsc_json_get(nsc_json_root(&empty), "totals"), "calls");
    cr_assert_gt(summary_count(ec, "stop", "ProxyStep"), 0);
    for (int t = 0; t < NSC_T_COUNT; t++) {
        const char *n = nsc_type_name((unsigned)t);
        cr_assert_eq(summary_count(ec, "stop", n), summary_count(ec, "start", n), "%s", n);
        if (t == NSC_T_PROXY_CTRL)
            continue;
        for (int k = 0; k < 3; k++) {
            const char *kind = (const char *[]){"start", "stop", "state"}[k];
            cr_assert_eq(summary_count(ec, kind, n), summary_count(rc, kind, n), "%s %s", kind, n);
        }
    }
    nsc_json_free(&rec);
    nsc_json_free(&empty);
}

/* The host thread runs at most 16 collectives ahead of its proxy thread (NCCL's
 * work FIFO bounds it), so a job run flat out never has more than 16 x
 * channels KernelCh events open at once in a process. */
Test(emu, host_runs_a_bounded_number_of_collectives_ahead_of_the_proxy, .timeout = 90)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, "--scenario ring --nodes 2 --ranks-per-node 1 --channels 2 --iters 100"), 0);
    jlines rec = {0};
    jlines_read_dir(dir, &rec);
    static uint64_t open_pid[MAXH], open_handle[MAXH];
    size_t nopen = 0, most = 0, started = 0;
    for (size_t i = 0; i < rec.n; i++) {
        const nsc_json *r = nsc_json_root(&rec.docs[i]);
        uint64_t pid = jnum(r, "pid"), h = jhex(r, "handle");
        if (strcmp(jstr(r, "call"), "start") == 0 && strcmp(jstr(r, "type"), "KernelCh") == 0) {
            cr_assert_lt(nopen, MAXH);
            open_pid[nopen] = pid;
            open_handle[nopen++] = h;
            started++;
        } else if (strcmp(jstr(r, "call"), "stop") == 0) {
            for (size_t k = 0; k < nopen; k++)
                if (open_pid[k] == pid && open_handle[k] == h) {
                    open_pid[k] = open_pid[--nopen];
                    open_handle[k] = open_handle[nopen];
                    break;
                }
        }
        size_t in_pid = 0;
        for (size_t k = 0; k < nopen; k++)
            in_pid += open_pid[k] == pid;
        most = in_pid > most ? in_pid : most;
    }
    cr_assert_eq(started, 2 * 100 * 2);
    cr_assert_leq(most, 16 * 2, "%zu KernelCh open at once", most);
    jlines_free(&rec);
}
