/* test_reads_ledger.c: which queries read the ledger (nsc_query_reads_ledger),
 * against what they answer: a query said to read none answers the same bytes
 * from a store with and without the job's ledger records (what lets a
 * ClickHouse collector load a job without them for it), and the scopes a
 * ClickHouse load reads for a query instead of its whole job. */
#include <criterion/criterion.h>
#include <string.h>

#include "mix.h"
#include "qfixture.h"
#include "query.h"
#include "storeutil.h"

#define QS "job=jobA&comm=0xabc123"
#define NQ 4
static const char *const names[NQ] = {"timeline", "p2p", "collectives", "stats"};

static int reads_ledger(const char *name, const char *qs)
{
    nsc_query *q;
    char err[256];
    cr_assert_eq(nsc_query_parse(name, qs, &q, err, sizeof err), 0, "%s", err);
    int reads = nsc_query_reads_ledger(q);
    nsc_query_free(q);
    return reads;
}

/* Each fixture rank's process puts its records of the fixture's collectives. */
static void put_ledger(nsc_store *st)
{
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_mix_strs(strs);
    cr_assert_eq(nsc_store_begin(st, 3), 0);
    nsc_proc procs[QF_RANKS];
    nsc_ledger_rec recs[QF_RANKS][QF_COLLS];
    nsc_ledger_batch b[QF_RANKS];
    nsc_store_ledger l[QF_RANKS];
    for (int r = 0; r < QF_RANKS; r++) {
        procs[r] = nsc_test_proc("jobA", r < 2 ? "h0" : "h1", 100 + (uint32_t)r, r % 2);
        for (int s = 0; s < QF_COLLS; s++)
            nsc_mix_ledger(&recs[r][s], QF_COMM, (uint64_t)s, r);
        b[r] = (nsc_ledger_batch){.pid = procs[r].pid, .nstrs = NSC_MIX_NSTRS, .nrecs = QF_COLLS, .strs = strs,
                                  .recs = recs[r]};
        l[r] = (nsc_store_ledger){&procs[r], &b[r], {0}};
        cr_assert_eq(nsc_store_put_ledger(st, &l[r]), 0);
    }
    cr_assert_eq(nsc_store_commit(st), 0);
    cr_assert_eq(l[0].counts.stored, QF_COLLS);
}

Test(reads_ledger, what_reads_none_answers_alike_without_it)
{
    char *dir = nsc_tmp_store_dir();
    cr_assert(dir);
    cr_assert_eq(qf_fill(dir), 0);
    nsc_store *st;
    cr_assert_eq(nsc_store_open(dir, NULL, &st), 0);
    qf_result before[NQ];
    for (int i = 0; i < NQ; i++) {
        before[i] = qf_run(st, names[i], QS);
        cr_assert_eq(before[i].rc, 0, "%s: %s", names[i], before[i].err);
    }
    put_ledger(st);
    for (int i = 0; i < NQ; i++) {
        qf_result after = qf_run(st, names[i], QS);
        cr_assert_eq(after.rc, 0, "%s: %s", names[i], after.err);
        int same = after.len == before[i].len && memcmp(after.text, before[i].text, after.len) == 0;
        /* the ledger changes collectives and stats: the store has it */
        cr_assert_eq(same, !reads_ledger(names[i], QS), "%s: %s with the ledger, and said to read %s", names[i],
                     same ? "the same" : "other bytes", reads_ledger(names[i], QS) ? "it" : "none");
        qf_result_free(&after);
        qf_result_free(&before[i]);
    }
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* Every endpoint but timeline and p2p reads it, and those with clock=causal. */
Test(reads_ledger, every_other_endpoint_reads_it)
{
    static const char *const others[] = {"comms", "collectives", "stats", "topology", "ledger"};
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        cr_assert(reads_ledger(others[i], QS), "%s", others[i]);
    cr_assert(!reads_ledger("timeline", QS "&clock=model"));
    cr_assert(reads_ledger("timeline", QS "&clock=causal"));
    cr_assert(reads_ledger("p2p", QS "&clock=causal"));
}

/* The scope of name?qs (a ledger query's, else a raw-event one's) into *s,
 * every byte set beforehand: a field the scope leaves unset shows. */
static int scope_of(const char *name, const char *qs, nsc_query_scope *s)
{
    nsc_query *q;
    char err[256];
    cr_assert_eq(nsc_query_parse(name, qs, &q, err, sizeof err), 0, "%s", err);
    memset(s, 0xa5, sizeof *s);
    int rc = nsc_query_ledger_scope(q, s) == 0 ? 0 : nsc_query_event_scope(q, s) == 0 ? 1 : -1;
    nsc_query_free(q);
    return rc;
}

/* What a ClickHouse load reads for each query: a ledger window, a raw-event
 * window, the definitions alone (comms), or the whole job (-1). */
Test(reads_ledger, scopes_say_what_a_load_reads)
{
    nsc_query_scope s;
    cr_assert_eq(scope_of("ledger", QS "&seq=3-7", &s), 0);
    cr_assert(!s.events && !s.defs && s.comm == 0xabc123 && s.seq_lo == 3 && s.seq_hi == 7);
    cr_assert_eq(scope_of("comms", "job=jobA", &s), 1);
    cr_assert(s.events && s.defs);
    cr_assert_eq(scope_of("comms", "", &s), -1, "no job named: the only job, read whole");
    cr_assert_eq(scope_of("p2p", QS "&t0_ns=5", &s), 1);
    cr_assert(s.events && !s.defs && s.p2p && s.comm == 0xabc123 && s.t0 == 5 && s.t1 == UINT64_MAX);
    cr_assert_eq(scope_of("p2p", QS, &s), 1, "no window: the blocks holding P2p events, of the whole job");
    cr_assert(s.events && s.p2p && s.t0 == 0 && s.t1 == UINT64_MAX);
    cr_assert_eq(scope_of("p2p", QS "&t0_ns=5&clock=causal", &s), -1, "the causal clock reads the ledger");
    cr_assert_eq(scope_of("timeline", QS "&t1_ns=9", &s), 1);
    cr_assert(s.events && !s.defs && !s.p2p && s.t0 == 0 && s.t1 == 9);
    cr_assert_eq(scope_of("timeline", QS, &s), -1, "no window: the whole job");
    cr_assert_eq(scope_of("topology", QS "&t0_ns=5", &s), -1);
}
