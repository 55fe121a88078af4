/* test_gpu_align.c: the timeline's GPU times on a host whose clock steps.
 *
 * One rank on a simulated host (offset, drift, a step back or forward) with a
 * drifting GPU timer; its KernelCh pTimers are observed by a polling thread
 * (lag up to 50 us) and its host's probes build the stored clock model. The
 * rank's GPU line is fitted against aligned time, so GPU times are as good as
 * the host model on both sides of the step; and a cursor-paged read gives the
 * lines of the unpaged read (the line is fitted over the whole window).
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "qfixture.h"
#include "qjson.h"
#include "sim.h"
#include "storeutil.h"

#define COMM 0x6a11ull
#define SPAN_S 40
#define STEP_AT_S 20.05
#define EVERY_NS 10e6   /* a KernelCh every 10 ms */
#define BATCH 400
#define NEVENTS ((size_t)SPAN_S * 100)  /* SPAN_S s at EVERY_NS */

static const nsc_sim_net lan = {20000, 5000, 0, 0, 0};

typedef struct run {
    nsc_sim_host h;
    nsc_sim_gpu gpu;
    double t[NEVENTS];  /* true time of event id i + 1's start */
} run;

static void put_model(nsc_store *st, run *x, uint64_t seed)
{
    nsc_sim_rng r = {seed};
    nsc_clock_model m;
    cr_assert_eq(nsc_clock_init(&m, NULL), 0);
    cr_assert_eq(nsc_sim_feed(&m, &x->h, &lan, &r, 100e6, SPAN_S * 1e9), 0);
    cr_assert_eq(m.nsegs, 2, "the step starts a segment: %zu", m.nsegs);
    cr_assert_eq(nsc_store_put_clock(st, "stepper", &m), 0);
    nsc_clock_free(&m);
}

static void put_events(nsc_store *st, run *x, uint64_t seed)
{
    nsc_sim_rng r = {seed};
    nsc_proc p = nsc_test_proc("gpu", "stepper", 700, 0);
    nsc_ctx_def ctx = nsc_test_ctx(0, COMM, 0, 1);
    static nsc_event ev[BATCH];
    for (size_t i = 0; i < NEVENTS;) {
        size_t n = 0;
        for (; n < BATCH && i < NEVENTS; n++, i++) {
            double t = 0.001e9 + (double)i * EVERY_NS, stop = t + 20000;
            nsc_event *e = &ev[n];
            memset(e, 0, sizeof *e);
            e->id = i + 1;
            e->type = NSC_T_KERNEL_CH;
            e->start_ns = nsc_sim_host_time(&x->h, t);
            e->stop_ns = nsc_sim_host_time(&x->h, stop);
            e->d.kernel_ch.ptimer_start = nsc_sim_ptimer(&x->gpu, t);
            e->d.kernel_ch.ptimer_stop = nsc_sim_ptimer(&x->gpu, stop);
            e->d.kernel_ch.ptimer_stop_ns = nsc_sim_host_time(&x->h, stop + nsc_sim_range(&r, 0, 50000));
            x->t[i] = t;
        }
        nsc_store_batch b = {&p, &ctx, 1, NULL, 0, ev, n, NULL, 0, NULL, 0};
        cr_assert_eq(nsc_store_put(st, &b), 0);
    }
}

/* The timeline's text (malloc'd). */
static char *timeline(nsc_store *st, const char *qs)
{
    qf_result r = qf_run(st, "timeline", qs);
    cr_assert_eq(r.rc, 0, "%s: %s", qs, r.err);
    return r.text;
}

/* |gpu_start_ns - truth| of every event outside the probe interval after the
 * step (where the model itself cannot know the offset); their p99 and how
 * many the event's gpu_err_ns covers. */
static void gpu_errors(const run *x, const char *out, double *p99, double *covered)
{
    static double err[NEVENTS];
    size_t n = 0, within = 0;
    for (const char *line = strchr(out, '\n') + 1, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        nsc_json_doc d;
        nsc_json_error e;
        cr_assert_eq(nsc_json_parse(line, (size_t)(nl - line), NULL, &d, &e), 0, "%s", e.msg);
        const nsc_json *o = nsc_json_root(&d);
        if (strcmp(nsc_json_str(nsc_json_get(o, "kind")), "event") == 0) {
            double t = x->t[qj_u64(o, "id") - 1];
            if (t < STEP_AT_S * 1e9 || t > STEP_AT_S * 1e9 + 100e6) {
                err[n] = fabs((double)(int64_t)(qj_u64(o, "gpu_start_ns") - nsc_sim_ref_time(&x->h, t)));
                within += err[n++] <= (double)qj_u64(o, "gpu_err_ns");
            }
        }
        nsc_json_free(&d);
    }
    cr_assert_gt(n, NEVENTS * 9 / 10);
    *covered = (double)within / (double)n;
    *p99 = nsc_sim_quantile(err, n, 0.99);
}

/* A Coll of another communicator from 1 s to 31 s: the store's longest block. */
static void put_long_block(nsc_store *st, run *x)
{
    nsc_proc p = nsc_test_proc("gpu", "stepper", 700, 0);
    nsc_ctx_def ctx = nsc_test_ctx(1, 0x7777, 0, 1);
    nsc_event ev = {.id = NEVENTS + 1, .type = NSC_T_COLL, .ctx = 1, .start_ns = nsc_sim_host_time(&x->h, 1e9),
                    .stop_ns = nsc_sim_host_time(&x->h, 31e9)};
    nsc_store_batch b = {&p, &ctx, 1, NULL, 0, &ev, 1, NULL, 0, NULL, 0};
    cr_assert_eq(nsc_store_put(st, &b), 0);
}

static void with_store_long(int64_t step_ns, int long_block, void (*check)(nsc_store *, const run *))
{
    static run x;
    x.h = (nsc_sim_host){2000000000000ull, 1000000000000ull, 80e-6, step_ns, STEP_AT_S * 1e9};
    x.gpu = (nsc_sim_gpu){1700000000000000000ull, -40e-6};
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    put_events(st, &x, 7);
    if (long_block)
        put_long_block(st, &x);
    put_model(st, &x, 8);
    cr_assert_eq(nsc_store_commit(st), 0);
    check(st, &x);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

static void with_store(int64_t step_ns, void (*check)(nsc_store *, const run *))
{
    with_store_long(step_ns, 0, check);
}

static void check_accuracy(nsc_store *st, const run *x)
{
    char *out = timeline(st, "comm=0x6a11&type=kernelch");
    cr_assert(strstr(out, "\"gpu_clock\":\"fitted\""));
    double p99, covered;
    gpu_errors(x, out, &p99, &covered);
    cr_assert_leq(p99, 20000, "step %ld: GPU p99 %.0f ns", (long)x->h.step_ns, p99);
    cr_assert_geq(covered, 0.99, "step %ld: gpu_err_ns covers %.3f", (long)x->h.step_ns, covered);
    free(out);
}

/* Backward: after the step and before the model's new segment starts, the
 * old line aligns the host's times 20 ms early; those pairs are left out. */
Test(gpu_align, backward_step)
{
    with_store(-20000000, check_accuracy);
}

Test(gpu_align, forward_step)
{
    with_store(50000000, check_accuracy);
}

/* The event lines of a read, header and end line left out. */
static void append_events(char **all, size_t *len, const char *out)
{
    const char *from = strchr(out, '\n') + 1, *end = strstr(out, "{\"kind\":\"end\"");
    cr_assert(end);
    size_t n = (size_t)(end - from);
    *all = realloc(*all, *len + n + 1);
    cr_assert(*all);
    memcpy(*all + *len, from, n);
    *len += n;
    (*all)[*len] = 0;
}

static void check_paging(nsc_store *st, const run *x)
{
    (void)x;
    char *whole = NULL, *paged = NULL, qs[128];
    size_t wlen = 0, plen = 0, pages = 0;
    char *out = timeline(st, "comm=0x6a11&type=kernelch");
    append_events(&whole, &wlen, out);
    free(out);
    snprintf(qs, sizeof qs, "comm=0x6a11&type=kernelch&limit=700");
    for (;;) {
        out = timeline(st, qs);
        append_events(&paged, &plen, out);
        pages++;
        const char *c = strstr(out, "\"next_cursor\":\"");
        if (!c) {
            free(out);
            break;
        }
        c += strlen("\"next_cursor\":\"");
        snprintf(qs, sizeof qs, "comm=0x6a11&type=kernelch&limit=700&cursor=%.*s",
                 (int)(strchr(c, '"') - c), c);
        free(out);
    }
    cr_assert_eq(pages, (NEVENTS + 699) / 700);
    cr_assert_eq(plen, wlen);
    cr_assert(strcmp(paged, whole) == 0, "a paged read differs from the unpaged read");
    free(whole);
    free(paged);
}

Test(gpu_align, pages_equal_the_unpaged_read)
{
    with_store(-20000000, check_paging);
}

/* The KernelCh lines of the window [25 s, 26 s] of each store. */
static char *windows[2];

static void keep_window(nsc_store *st, const run *x)
{
    char qs[160];
    snprintf(qs, sizeof qs, "comm=0x6a11&type=kernelch&t0_ns=%" PRIu64 "&t1_ns=%" PRIu64,
             nsc_sim_ref_time(&x->h, 25e9), nsc_sim_ref_time(&x->h, 26e9));
    windows[windows[0] != NULL] = timeline(st, qs);
}

/* Blocks of 400 events (4 s) are walked from 4 s before the window; with a
 * block of 30 s in the store, from 30 s before: those that end before the
 * window add no pair to its GPU line. */
Test(gpu_align, a_long_block_elsewhere_changes_no_gpu_time)
{
    with_store_long(-20000000, 0, keep_window);
    with_store_long(-20000000, 1, keep_window);
    cr_assert(strstr(windows[0], "\"gpu_clock\":\"fitted\""));
    cr_assert_str_eq(windows[1], windows[0]);
    free(windows[0]);
    free(windows[1]);
}
