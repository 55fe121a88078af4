/* e2e_compare.c: nsc-e2e-compare EMU.json RECV.json [--drops]
 *
 * Compares what the emulator emitted (its summary) with what the test
 * receiver got from the plugin: per (communicator, rank) the events per type
 * and the states per state, PXN (foreign) events per type, and the plugin's
 * accounting: every parent link resolved, emitted == received + dropped, and
 * emitted == what the emulator handed over.
 *
 * Events left open and processes that died are modelled. A rank whose process
 * ran to its finalize delivers every event it started: the stopped ones, and
 * the open ones flagged NSC_EVF_OPEN (exactly the emulator's open_events). A
 * rank whose process was killed delivers exactly the events it stopped, none
 * flagged open, and its states, of which those of its never-stopped events
 * (the emulator's open_states) arrive without their event: the only states
 * allowed to be unmatched. Its events whose parent never stopped cannot link;
 * every other process's links must all resolve. Without --drops nothing may be dropped; with it,
 * drops are allowed but must be exactly accounted. Prints each mismatch;
 * exits 0 only if there is none.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "event.h"
#include "json.h"

static int failures;

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    failures++;
}

static const nsc_json *find_rank(const nsc_json *ranks, uint64_t comm, int64_t rank)
{
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        uint64_t c;
        int64_t k;
        if (!nsc_json_u64(nsc_json_get(r, "comm_id"), &c) &&
            !nsc_json_i64(nsc_json_get(r, "rank"), &k) && c == comm && k == rank)
            return r;
    }
    return NULL;
}

/* Per name in [0, n): expected (emu) vs received. */
static void compare_named(const nsc_json *want, const nsc_json *got, unsigned n,
                          const char *(*name)(unsigned), uint64_t comm, int rank, int drops)
{
    for (unsigned i = 0; i < n; i++) {
        uint64_t w = e2e_count(want, name(i)), g = e2e_count(got, name(i));
        if (drops ? g > w : g != w)
            fail("%s: emitted %llu, received %llu (comm %llu rank %d)\n", name(i),
                 (unsigned long long)w, (unsigned long long)g, (unsigned long long)comm, rank);
    }
}

/* What the plugin must have emitted in all, per type; and the states that may
 * arrive without their event (those of killed ranks' open events). */
static uint64_t want_emitted[NSC_T_COUNT];
static uint64_t want_unmatched;

static uint64_t sum_named(const nsc_json *obj, unsigned n, const char *(*name)(unsigned))
{
    uint64_t s = 0;
    for (unsigned i = 0; i < n; i++)
        s += e2e_count(obj, name(i));
    return s;
}

/* Events: what e2e_rank_delivered says, the open ones flagged. */
static void compare_events(const nsc_json *emu, const nsc_json *r, const nsc_json *g, bool dead, uint64_t comm,
                           int rank, int drops)
{
    const nsc_json *want = e2e_rank_delivered(emu, r);
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        want_emitted[t] += e2e_count(want, nsc_type_name(t));
    compare_named(want, nsc_json_get(g, "events"), NSC_T_COUNT, nsc_type_name, comm, rank, drops);
    uint64_t open = dead ? 0 : e2e_count(r, "open_events"), got_open = e2e_count(g, "open_events");
    if (drops ? got_open > open : got_open != open)
        fail("open events: %llu expected, %llu received flagged open (comm %llu rank %d)\n",
             (unsigned long long)open, (unsigned long long)got_open, (unsigned long long)comm,
             rank);
}

/* States: all arrive; a killed rank's states of never-stopped events arrive
 * unmatched, so its matched states fall short by exactly open_states. */
static void compare_states(const nsc_json *r, const nsc_json *g, bool dead, uint64_t comm,
                           int rank, int drops)
{
    const nsc_json *want = nsc_json_get(r, "states"), *got = nsc_json_get(g, "states");
    if (!dead) {
        compare_named(want, got, NSC_S_COUNT, nsc_state_name, comm, rank, drops);
        return;
    }
    compare_named(want, got, NSC_S_COUNT, nsc_state_name, comm, rank, 1);
    uint64_t w = sum_named(want, NSC_S_COUNT, nsc_state_name);
    uint64_t k = sum_named(got, NSC_S_COUNT, nsc_state_name), open = e2e_count(r, "open_states");
    want_unmatched += open;
    if (!drops && k + open != w)
        fail("killed rank: %llu states, %llu matched + %llu of open events (comm %llu rank %d)\n",
             (unsigned long long)w, (unsigned long long)k, (unsigned long long)open,
             (unsigned long long)comm, rank);
}

static void compare_ranks(const nsc_json *emu, const nsc_json *recv, int drops)
{
    const nsc_json *ranks = nsc_json_get(emu, "ranks"), *got = nsc_json_get(recv, "ranks");
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        bool profiled = false;
        uint64_t comm = 0;
        int64_t rank = 0;
        nsc_json_bool(nsc_json_get(r, "profiled"), &profiled);
        nsc_json_u64(nsc_json_get(r, "comm_id"), &comm);
        nsc_json_i64(nsc_json_get(r, "rank"), &rank);
        const nsc_json *starts = nsc_json_get(nsc_json_get(r, "calls"), "start");
        if (!profiled || !starts || !nsc_json_first(starts))
            continue;
        bool dead = e2e_pid_killed(emu, e2e_count(r, "pid"));
        const nsc_json *g = find_rank(got, comm, rank);
        if (!g) {
            fail("rank missing (comm %llu rank %d)\n", (unsigned long long)comm, (int)rank);
            continue;
        }
        compare_events(emu, r, g, dead, comm, (int)rank, drops);
        compare_states(r, g, dead, comm, (int)rank, drops);
    }
}

static void expect_eq(const char *what, uint64_t a, uint64_t b)
{
    if (a != b)
        fail("%s: %llu != %llu\n", what, (unsigned long long)a, (unsigned long long)b);
}

static void compare_accounting(const nsc_json *emu, const nsc_json *recv, int drops)
{
    const nsc_json *foreign = nsc_json_get(nsc_json_get(nsc_json_get(emu, "totals"), "foreign"),
                                           "stop");
    compare_named(foreign, nsc_json_get(recv, "foreign"), NSC_T_COUNT, nsc_type_name, 0, -1,
                  drops);
    const nsc_json *c = nsc_json_get(recv, "counters");
    const nsc_json *emitted = nsc_json_get(c, "emitted"), *dropped = nsc_json_get(c, "dropped");
    const nsc_json *events = nsc_json_get(recv, "events");
    uint64_t total_dropped = 0;
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        const char *n = nsc_type_name(t);
        expect_eq(n, e2e_count(events, n) + e2e_count(dropped, n), e2e_count(emitted, n));
        expect_eq(n, e2e_count(emitted, n), want_emitted[t] + e2e_count(foreign, n));
        total_dropped += e2e_count(dropped, n);
    }
    uint64_t states = 0;
    const nsc_json *st = nsc_json_get(recv, "states");
    for (unsigned s = 0; s < NSC_S_COUNT; s++)
        states += e2e_count(st, nsc_state_name(s));
    expect_eq("states received + dropped vs emitted", states + e2e_count(c, "states_dropped"),
              e2e_count(c, "states_emitted"));
    const nsc_json *ce = nsc_json_get(c, "completions_emitted");
    const nsc_json *cd = nsc_json_get(c, "completions_dropped");
    expect_eq("completions received + dropped vs emitted",
              e2e_count(recv, "completions") + sum_named(cd, NSC_T_COUNT, nsc_type_name),
              sum_named(ce, NSC_T_COUNT, nsc_type_name));
    if (!drops)
        expect_eq("dropped completions", sum_named(cd, NSC_T_COUNT, nsc_type_name), 0);
    expect_eq("bad batches", e2e_count(recv, "bad_batches"), 0);
    expect_eq("bad handles", e2e_count(c, "bad_handles"), 0);
    if (drops)
        return;
    expect_eq("dropped events", total_dropped, 0);
    /* A killed process's events may name parents it never stopped (its open
     * GroupApi, say): only the streams of processes that finalized must resolve. */
    const nsc_json *procs = nsc_json_get(recv, "processes");
    for (const nsc_json *p = nsc_json_first(procs); p; p = nsc_json_next(procs, p))
        if (!e2e_pid_killed(emu, e2e_count(p, "pid")))
            expect_eq("unresolved parent links", e2e_count(p, "links_unresolved"), 0);
    expect_eq("states unmatched (those of killed ranks' open events)",
              e2e_count(recv, "states_unmatched"), want_unmatched);
}

int main(int argc, char **argv)
{
    if (argc < 3 || (argc == 4 && strcmp(argv[3], "--drops") != 0) || argc > 4) {
        fprintf(stderr, "usage: %s EMU.json RECV.json [--drops]\n", argv[0]);
        return 2;
    }
    int drops = argc == 4;
    nsc_json_doc emu, recv;
    if (e2e_load_json("nsc-e2e-compare", argv[1], &emu) != 0 || e2e_load_json("nsc-e2e-compare", argv[2], &recv) != 0)
        return 2;
    compare_ranks(nsc_json_root(&emu), nsc_json_root(&recv), drops);
    compare_accounting(nsc_json_root(&emu), nsc_json_root(&recv), drops);
    nsc_json_free(&emu);
    nsc_json_free(&recv);
    if (failures)
        fprintf(stderr, "e2e-compare: %d mismatches\n", failures);
    return failures ? 1 : 0;
}
