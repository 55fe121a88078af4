/* test_plugin_chain.c: NCCLSCOPE_CHAIN against the record plugin (scripts/emu/plugins):
 * the masks united, each plugin given only its own types with its own
 * handles as parents, and a chained plugin that fails at init or in its calls
 * (ncclscope goes on, one warning through NCCL's logger). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/wait.h>

#include "harness.h"
#include "launches.h"
#include "json.h"

static int warnings;
static char last_warning[512];

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
    (void)flags, (void)file, (void)line;
    if (level != 2)
        return;
    /* ncclscope's format is "%s", the message its argument. */
    cr_assert_str_eq(fmt, "%s");
    va_list ap;
    va_start(ap, fmt);
    snprintf(last_warning, sizeof last_warning, "%s", va_arg(ap, const char *));
    va_end(ap);
    warnings++;
}

static char rec_file[128];

/* The receiver, ncclscope's mask, the chained record plugin and its file;
 * ncclscope's table of that version. */
static const void *setup_v(int version, const char *ours, const char *theirs, void **dl)
{
    h_env();
    setenv("NCCLSCOPE_EVENT_MASK", ours, 1);
    setenv("NCCLSCOPE_CHAIN", NSC_RECORD_PATH, 1);
    setenv("NCCLSCOPE_TEST_RECORD_MASK", theirs, 1);
    snprintf(rec_file, sizeof rec_file, "/tmp/nsc-chain-%d.jsonl", (int)getpid());
    unlink(rec_file);
    setenv("NCCLSCOPE_TEST_RECORD_FILE", rec_file, 1);
    h_recv_start();
    const void *p = h_load(version, dl);
    cr_assert_not_null(p);
    return p;
}

static const ncclProfiler_v7_t *setup(const char *ours, const char *theirs, void **dl)
{
    return setup_v(7, ours, theirs, dl);
}

/* The record plugin's lines of call kind `call` (from process pid; 0: any),
 * in order: how many, the first cap of them parsed into out. */
static size_t rec_scan(const char *call, pid_t pid, nsc_json_doc *out, size_t cap)
{
    FILE *f = fopen(rec_file, "r");
    if (!f)
        return 0;
    char buf[4096];
    size_t n = 0;
    while (fgets(buf, sizeof buf, f)) {
        nsc_json_doc d;
        nsc_json_error err;
        cr_assert_eq(nsc_json_parse(buf, strlen(buf), NULL, &d, &err), 0);
        const nsc_json *c = nsc_json_get(nsc_json_root(&d), "call");
        const nsc_json *p = nsc_json_get(nsc_json_root(&d), "pid");
        int match = c && strcmp(c->text, call) == 0 && (!pid || atol(p->text) == (long)pid);
        if (match && n < cap)
            out[n] = d;
        else
            nsc_json_free(&d);
        n += match;
    }
    fclose(f);
    return n;
}

static size_t rec_lines(const char *call, nsc_json_doc *out, size_t cap)
{
    return rec_scan(call, 0, out, cap);
}

static size_t rec_count(const char *call, pid_t pid)
{
    return rec_scan(call, pid, NULL, 0);
}

static const char *field(const nsc_json_doc *d, const char *key)
{
    const nsc_json *v = nsc_json_get(nsc_json_root(d), key);
    return v ? v->text : "";
}

static void start(const ncclProfiler_v7_t *p, void *ctx, void **h, uint64_t type, void *parent,
                  void *group)
{
    ncclProfilerEventDescr_v7_t d = {.type = type, .parentObj = parent, .rank = 1};
    if (type == ncclProfileColl) {
        d.coll.func = "AllReduce";
        d.coll.parentGroup = group;
    } else if (type == ncclProfileProxyOp) {
        d.proxyOp.pid = getpid();
    }
    cr_assert_eq(p->startEvent(ctx, h, &d), ncclSuccess);
}

Test(plugin_chain, masks_unite_and_each_plugin_gets_only_its_types)
{
    void *dl, *ctx, *group, *coll, *op, *step;
    const ncclProfiler_v7_t *p = setup("coll,proxyop", "group,coll,proxystep", &dl);
    int mask = ncclProfileKernelCh; /* NCCL's initial mask (NCCL_PROFILE_EVENT_MASK) */
    cr_assert_eq(p->init(&ctx, 7, &mask, "world", 1, 2, 1, logger), ncclSuccess);
    cr_assert_eq(mask, ncclProfileGroup | ncclProfileColl | ncclProfileProxyOp |
                           ncclProfileProxyStep, "NCCL sees the union");
    start(p, ctx, &group, ncclProfileGroup, NULL, NULL);
    start(p, ctx, &coll, ncclProfileColl, NULL, group);
    start(p, ctx, &op, ncclProfileProxyOp, coll, NULL);
    start(p, ctx, &step, ncclProfileProxyStep, op, NULL);
    ncclProfilerEventStateArgs_v7_t a = {.proxyStep = {.transSize = 4096}};
    p->recordEventState(step, (ncclProfilerEventState_t)NSC_S_PROXY_STEP_SEND_WAIT, &a);
    p->stopEvent(step);
    p->stopEvent(op);
    p->stopEvent(coll);
    p->stopEvent(group);
    p->finalize(ctx);
    dlclose(dl);
    nsc_recv_totals t;
    nsc_recv *r = h_recv_stop(&t);
    cr_assert_eq(t.events[NSC_T_COLL], 1);
    cr_assert_eq(t.events[NSC_T_PROXY_OP], 1);
    cr_assert_eq(h_sum(t.events, NSC_T_COUNT), 2, "ncclscope records only its own types");
    cr_assert_eq(h_sum(t.states, NSC_S_COUNT), 0, "nor their states");
    const nsc_event *c = nsc_recv_find(r, NSC_T_COLL, NULL, NULL);
    cr_assert_eq(c->d.coll.parent_group, 0, "a Group only the other asked for is no parent to us");
    cr_assert_eq(t.links, t.links_resolved);
    nsc_recv_free(r);

    nsc_json_doc in[1];
    cr_assert_eq(rec_lines("init", in, 1), 1);
    cr_assert_str_eq(field(&in[0], "mask_in"), "64", "the other sees NCCL's initial mask");
    nsc_json_free(&in[0]);
    nsc_json_doc st[8];
    size_t n = rec_lines("start", st, 8);
    cr_assert_eq(n, 3, "the record plugin gets Group, Coll and ProxyStep");
    cr_assert_str_eq(field(&st[0], "type"), "Group");
    cr_assert_str_eq(field(&st[1], "type"), "Coll");
    cr_assert_str_eq(field(&st[1], "parentGroup"), field(&st[0], "handle"), "its own Group handle");
    cr_assert_str_eq(field(&st[2], "type"), "ProxyStep");
    cr_assert_str_eq(field(&st[2], "parent"), "(nil)",
                     "its ProxyOp parent: one it did not ask for");
    for (size_t i = 0; i < n; i++)
        nsc_json_free(&st[i]);
    nsc_json_doc sp[8];
    cr_assert_eq(rec_lines("stop", sp, 8), 3);
    for (size_t i = 0; i < 3; i++)
        nsc_json_free(&sp[i]);
    nsc_json_doc ss[2];
    cr_assert_eq(rec_lines("state", ss, 2), 1);
    cr_assert_str_eq(field(&ss[0], "name"), "ProxyStepSendWait");
    nsc_json_free(&ss[0]);
    cr_assert_eq(warnings, 0);
    unlink(rec_file);
}

/* Two communicators, the chained init failing for both: ncclscope profiles
 * both with its own mask, and warns once. */
Test(plugin_chain, failing_init_leaves_ncclscope_profiling)
{
    void *dl, *ctx[2], *h;
    const ncclProfiler_v7_t *p = setup("coll", "all", &dl);
    setenv("NCCLSCOPE_TEST_RECORD_FAIL_INIT", "1", 1);
    for (int i = 0; i < 2; i++) {
        int mask = 0;
        cr_assert_eq(p->init(&ctx[i], 7 + (uint64_t)i, &mask, "world", 1, 2, 1, logger),
                     ncclSuccess);
        cr_assert_eq(mask, ncclProfileColl, "only ours");
        start(p, ctx[i], &h, ncclProfileColl, NULL, NULL);
        p->stopEvent(h);
    }
    for (int i = 0; i < 2; i++)
        p->finalize(ctx[i]);
    dlclose(dl);
    nsc_recv_totals t;
    nsc_recv_free(h_recv_stop(&t));
    cr_assert_eq(t.events[NSC_T_COLL], 2);
    cr_assert_eq(warnings, 1, "logged once");
    cr_assert(strstr(last_warning, "chained plugin record: init returned 3"), "%s", last_warning);
    unsetenv("NCCLSCOPE_TEST_RECORD_FAIL_INIT");
    unlink(rec_file);
}

/* Every call of the chained plugin fails: each still reaches it, ncclscope
 * loses nothing, and one warning says so. */
Test(plugin_chain, failing_calls_are_forwarded_and_logged_once)
{
    void *dl, *ctx, *h;
    const ncclProfiler_v7_t *p = setup("coll", "coll", &dl);
    setenv("NCCLSCOPE_TEST_RECORD_FAIL_CALLS", "1", 1);
    int mask = 0;
    cr_assert_eq(p->init(&ctx, 7, &mask, "world", 1, 2, 1, logger), ncclSuccess);
    for (int i = 0; i < 100; i++) {
        start(p, ctx, &h, ncclProfileColl, NULL, NULL);
        cr_assert_eq(p->stopEvent(h), ncclSuccess);
    }
    p->finalize(ctx);
    dlclose(dl);
    nsc_recv_totals t;
    nsc_recv_free(h_recv_stop(&t));
    cr_assert_eq(t.events[NSC_T_COLL], 100);
    size_t starts = rec_count("start", getpid()), stops = rec_count("stop", getpid());
    cr_assert_eq(starts, 100);
    cr_assert_eq(stops, 100, "a failed start's handle is still stopped");
    cr_assert_eq(warnings, 1);
    cr_assert(strstr(last_warning, "startEvent returned 3"), "%s", last_warning);
    unsetenv("NCCLSCOPE_TEST_RECORD_FAIL_CALLS");
    unlink(rec_file);
}

/* ProxyOps only the chained plugin asked for, never stopped on communicator
 * 1: its finalize frees their slots, so communicator 0's Colls after it find
 * room (they once waited for communicator 0's own finalize). */
Test(plugin_chain, quiet_slots_go_at_their_communicators_finalize)
{
    void *dl, *ctx[2], *h;
    const ncclProfiler_v7_t *p = setup("coll", "coll,proxyop", &dl);
    for (int i = 0; i < 2; i++) {
        int mask = 0;
        cr_assert_eq(p->init(&ctx[i], 7 + (uint64_t)i, &mask, "world", 1, 2, 1, logger), ncclSuccess);
    }
    for (int i = 0; i < 1100; i++)  /* more than a thread's 1,024 slots */
        start(p, ctx[1], &h, ncclProfileProxyOp, NULL, NULL);
    p->finalize(ctx[1]);
    for (int i = 0; i < 10; i++) {
        start(p, ctx[0], &h, ncclProfileColl, NULL, NULL);
        p->stopEvent(h);
    }
    p->finalize(ctx[0]);
    dlclose(dl);
    nsc_recv_totals t;
    nsc_recv_free(h_recv_stop(&t));
    cr_assert_eq(t.events[NSC_T_COLL], 10);
    cr_assert_eq(t.counters.dropped[NSC_T_COLL], 0);
    unlink(rec_file);
}

/* A library that cannot be loaded, and ncclscope naming itself: one warning,
 * nothing chained, ncclscope profiling. */
static void check_not_chained(const char *path, const char *why)
{
    void *dl, *ctx, *h;
    const ncclProfiler_v7_t *p = setup("coll", "all", &dl);
    setenv("NCCLSCOPE_CHAIN", path, 1);
    int mask = 0;
    cr_assert_eq(p->init(&ctx, 7, &mask, "world", 1, 2, 1, logger), ncclSuccess);
    cr_assert_eq(mask, ncclProfileColl);
    start(p, ctx, &h, ncclProfileColl, NULL, NULL);
    p->stopEvent(h);
    p->finalize(ctx);
    dlclose(dl);
    nsc_recv_totals t;
    nsc_recv_free(h_recv_stop(&t));
    cr_assert_eq(t.events[NSC_T_COLL], 1);
    cr_assert_eq(warnings, 1);
    cr_assert(strstr(last_warning, why), "%s", last_warning);
}

Test(plugin_chain, a_missing_library_is_not_chained)
{
    check_not_chained("/nonexistent/libnccl-profiler-x.so", "nothing chained");
}

Test(plugin_chain, ncclscope_does_not_chain_itself)
{
    check_not_chained(NSC_PLUGIN_PATH, "that is ncclscope itself");
}

/* fork() in the middle of a run: a child that calls in profiles with both
 * plugins (the chained one's context and handles inherited with ours), the
 * parent goes on undisturbed. Forked while ncclscope's shipper is idle (see
 * test_plugin_life.c). */
Test(plugin_chain, fork_child_calls_both_plugins)
{
    void *dl, *ctx;
    const ncclProfiler_v5_t *p = setup_v(5, "kernellaunch", "kernellaunch", &dl);
    int mask = 0;
    cr_assert_eq(p->init(&ctx, 1, &mask, "x", 1, 1, 0, logger), ncclSuccess);
    h_launches(p, ctx, 300);
    cr_assert_eq(h_recv_wait_events(300), 0);
    pid_t child = h_fork_calling_child(p, ctx, logger);
    cr_assert_geq(child, 0);
    h_launches(p, ctx, 100);
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
    p->finalize(ctx);
    dlclose(dl);
    nsc_recv_totals t;
    nsc_recv_free(h_recv_stop(&t));
    cr_assert_eq(t.events[NSC_T_KERNEL_LAUNCH], 300 + 100 + 20 + 30);
    cr_assert_eq(rec_count("start", getpid()), 400);
    cr_assert_eq(rec_count("stop", getpid()), 400);
    cr_assert_eq(rec_count("start", child), 50);
    cr_assert_eq(rec_count("init", child), 1);
    cr_assert_eq(rec_count("finalize", child), 2);
    cr_assert_eq(warnings, 0);
    unlink(rec_file);
}

/* dlopen, two communicators, events, finalize, dlclose: 20 times. Each
 * unload of ncclscope unloads the chained plugin too (nothing of it stays
 * mapped to be called), and each load chains it again. */
Test(plugin_chain, dlclose_unloads_the_chained_plugin)
{
    enum { CYCLES = 20, EVENTS = 50 };
    void *first;
    setup_v(5, "kernellaunch", "kernellaunch", &first);
    cr_assert_eq(dlclose(first), 0);
    for (int c = 0; c < CYCLES; c++) {
        void *dl, *ctx[2];
        const ncclProfiler_v5_t *p = h_load(5, &dl);
        cr_assert_not_null(p);
        int mask = 0;
        for (int k = 0; k < 2; k++) {
            cr_assert_eq(p->init(&ctx[k], 10 + (uint64_t)k, &mask, "c", 1, 2, k, logger),
                         ncclSuccess);
            h_launches(p, ctx[k], EVENTS);
        }
        void *chained = dlopen(NSC_RECORD_PATH, RTLD_NOW | RTLD_NOLOAD);
        cr_assert_not_null(chained, "chained");
        dlclose(chained); /* the probe's own reference */
        for (int k = 0; k < 2; k++)
            p->finalize(ctx[k]);
        cr_assert_eq(dlclose(dl), 0);
        cr_assert_null(dlopen(NSC_PLUGIN_PATH, RTLD_NOW | RTLD_NOLOAD), "cycle %d: ours unloaded",
                       c);
        cr_assert_null(dlopen(NSC_RECORD_PATH, RTLD_NOW | RTLD_NOLOAD), "cycle %d: unloaded", c);
    }
    nsc_recv_totals t;
    nsc_recv_free(h_recv_stop(&t));
    cr_assert_eq(t.events[NSC_T_KERNEL_LAUNCH], CYCLES * 2 * EVENTS);
    cr_assert_eq(rec_count("start", getpid()), CYCLES * 2 * EVENTS);
    cr_assert_eq(rec_count("finalize", getpid()), CYCLES * 2);
    cr_assert_eq(warnings, 0);
    unlink(rec_file);
}
