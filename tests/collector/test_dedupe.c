/* test_dedupe.c: the collector's committed-sequence sets never mark a
 * sequence that was not committed; a full gap table refuses new gaps and
 * still takes batches that fill or extend a range. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "dedupe.h"
#include "storeutil.h"

#define MAX NSC_DEDUPE_MAX_RANGES

/* Marks 0, 2, 4, ...: one range per even sequence, a gap after each. */
static nsc_dedupe *full_table(void)
{
    nsc_dedupe *d = nsc_dedupe_new();
    cr_assert(d);
    for (uint64_t i = 0; i < MAX; i++)
        cr_assert_eq(nsc_dedupe_mark(d, "a", 0, 2 * i), 0);
    return d;
}

Test(dedupe, full_table_refuses_new_gaps_and_marks_nothing)
{
    nsc_dedupe *d = full_table();
    /* Far past the last range, and inside an old gap's neighbourhood: a new range each. */
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 5000), NSC_DEDUPE_FULL);
    cr_assert_eq(nsc_dedupe_mark(d, "a", 0, 5000), NSC_DEDUPE_FULL);
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 5000), NSC_DEDUPE_FULL);
    /* The oldest gap stays open (the old code filled it on overflow). */
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 1), NSC_DEDUPE_NEW);
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 0), NSC_DEDUPE_DUPLICATE);
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 2), NSC_DEDUPE_DUPLICATE);
    /* Another agent has its own table. */
    cr_assert_eq(nsc_dedupe_classify(d, "b", 0, 5000), NSC_DEDUPE_NEW);
    cr_assert_eq(nsc_dedupe_mark(d, "b", 0, 5000), 0);
    nsc_dedupe_free(d);
}

/* The writer's one question about a batch: a marked sequence is a
 * duplicate even when the table is full, and only a sequence that would
 * open a gap is refused. */
Test(dedupe, classify_gives_one_verdict_per_batch)
{
    nsc_dedupe *d = full_table();
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 4), NSC_DEDUPE_DUPLICATE);
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 3), NSC_DEDUPE_NEW);  /* fills a gap */
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 2 * MAX + 1), NSC_DEDUPE_FULL);
    cr_assert_eq(nsc_dedupe_classify(d, "a", 1, 4), NSC_DEDUPE_NEW);  /* another epoch */
    cr_assert_eq(nsc_dedupe_classify(d, "c", 0, 0), NSC_DEDUPE_NEW);  /* an agent not seen */
    nsc_dedupe_free(d);
}

Test(dedupe, full_table_takes_fills_and_extensions)
{
    nsc_dedupe *d = full_table();
    uint64_t last = 2 * (MAX - 1);
    /* Extends the last range [last, last+1) upwards. */
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, last + 1), NSC_DEDUPE_NEW);
    cr_assert_eq(nsc_dedupe_mark(d, "a", 0, last + 1), 0);
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, last + 1), NSC_DEDUPE_DUPLICATE);
    /* Fills gap 1: ranges [0,1) and [2,3) merge, one range freed. */
    cr_assert_eq(nsc_dedupe_mark(d, "a", 0, 1), 0);
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 1), NSC_DEDUPE_DUPLICATE);
    /* So exactly one new gap fits now, and not a second. */
    cr_assert_eq(nsc_dedupe_mark(d, "a", 0, 9000), 0);
    cr_assert_eq(nsc_dedupe_mark(d, "a", 0, 9002), NSC_DEDUPE_FULL);
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 9002), NSC_DEDUPE_FULL);
    /* Already marked: not a new range, always fine. */
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 4), NSC_DEDUPE_DUPLICATE);
    cr_assert_eq(nsc_dedupe_mark(d, "a", 0, 4), 0);
    /* Extending a range downwards (lo - 1) is fine too: 9000 -> [8999, 9001). */
    cr_assert_eq(nsc_dedupe_mark(d, "a", 0, 8999), 0);
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 8999), NSC_DEDUPE_DUPLICATE);
    nsc_dedupe_free(d);
}

typedef struct seen {
    size_t n;
    nsc_store_seq_range first, second, last;
} seen;

static int record(void *arg, const char *agent, uint64_t epoch, const nsc_store_seq_range *r, size_t n)
{
    seen *s = arg;
    cr_assert_str_eq(agent, "a");
    cr_assert_eq(epoch, 0);
    s->n = n;
    s->first = r[0];
    s->second = r[1];
    s->last = r[n - 1];
    return 0;
}

/* What the store keeps is exactly the marked set, and a reload restores it. */
Test(dedupe, store_round_trip_keeps_exact_ranges)
{
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    nsc_dedupe *d = full_table();
    cr_assert_eq(nsc_dedupe_mark(d, "a", 0, 1), 0);
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    cr_assert_eq(nsc_dedupe_put_dirty(d, st), 0);
    cr_assert_eq(nsc_store_commit(st), 0);

    nsc_store_reader *rd;
    seen s = {0};
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_agents(rd, record, &s), 0);
    nsc_store_read_end(rd);
    cr_assert_eq(s.n, MAX - 1);
    cr_assert_eq(s.first.lo, 0);
    cr_assert_eq(s.first.hi, 3);
    cr_assert_eq(s.second.lo, 4);
    cr_assert_eq(s.second.hi, 5);
    cr_assert_eq(s.last.lo, 2 * (MAX - 1));
    cr_assert_eq(s.last.hi, 2 * (MAX - 1) + 1);

    nsc_dedupe *e = nsc_dedupe_new();
    cr_assert_eq(nsc_dedupe_load(e, st), 0);
    cr_assert_eq(nsc_dedupe_classify(e, "a", 0, 1), NSC_DEDUPE_DUPLICATE);
    cr_assert_neq(nsc_dedupe_classify(e, "a", 0, 3), NSC_DEDUPE_DUPLICATE);
    cr_assert_eq(nsc_dedupe_mark(e, "a", 0, 7000), 0);
    cr_assert_eq(nsc_dedupe_mark(e, "a", 0, 7002), NSC_DEDUPE_FULL);
    nsc_dedupe_free(e);
    nsc_dedupe_free(d);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

typedef struct epochs_seen {
    unsigned n;
    uint64_t epoch[3];
    nsc_store_seq_range r[3];
} epochs_seen;

static int record_epoch(void *arg, const char *agent, uint64_t epoch, const nsc_store_seq_range *r, size_t n)
{
    epochs_seen *s = arg;
    cr_assert_str_eq(agent, "a");
    cr_assert_eq(n, 1);
    cr_assert_lt(s->n, 3);
    s->epoch[s->n] = epoch;
    s->r[s->n++] = r[0];
    return 0;
}

/* An agent whose spool was made anew restarts at sequence 0 in a new epoch:
 * its batches are not the old epoch's, and each epoch keeps its own set
 * across a reload (epoch 0, the key of stores older than epochs, included). */
Test(dedupe, epochs_are_separate_sequence_spaces)
{
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    nsc_dedupe *d = nsc_dedupe_new();
    for (uint64_t seq = 0; seq < 3; seq++) {
        cr_assert_eq(nsc_dedupe_mark(d, "a", 0, seq), 0);
        cr_assert_eq(nsc_dedupe_mark(d, "a", 7, seq), 0);
    }
    cr_assert_neq(nsc_dedupe_classify(d, "a", 0x8000000000000001ull, 0), NSC_DEDUPE_DUPLICATE);
    cr_assert_eq(nsc_dedupe_mark(d, "a", 0x8000000000000001ull, 0), 0);
    cr_assert_eq(nsc_dedupe_agents(d), 3);
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    cr_assert_eq(nsc_dedupe_put_dirty(d, st), 0);
    cr_assert_eq(nsc_store_commit(st), 0);

    nsc_store_reader *rd;
    epochs_seen s = {0};
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_agents(rd, record_epoch, &s), 0);
    nsc_store_read_end(rd);
    cr_assert_eq(s.n, 3);
    cr_assert_eq(s.epoch[0], 0);  /* key order: the plain agent key first */
    cr_assert_eq(s.r[0].hi, 3);
    cr_assert_eq(s.epoch[1], 7);
    cr_assert_eq(s.r[1].hi, 3);
    cr_assert_eq(s.epoch[2], 0x8000000000000001ull);
    cr_assert_eq(s.r[2].hi, 1);

    nsc_dedupe *e = nsc_dedupe_new();
    cr_assert_eq(nsc_dedupe_load(e, st), 0);
    cr_assert_eq(nsc_dedupe_classify(e, "a", 7, 2), NSC_DEDUPE_DUPLICATE);
    cr_assert_neq(nsc_dedupe_classify(e, "a", 7, 3), NSC_DEDUPE_DUPLICATE);
    cr_assert_eq(nsc_dedupe_classify(e, "a", 0, 2), NSC_DEDUPE_DUPLICATE);
    cr_assert_eq(nsc_dedupe_classify(e, "a", 0x8000000000000001ull, 0), NSC_DEDUPE_DUPLICATE);
    cr_assert_neq(nsc_dedupe_classify(e, "a", 0x8000000000000001ull, 1), NSC_DEDUPE_DUPLICATE);
    cr_assert_neq(nsc_dedupe_classify(e, "a", 8, 0), NSC_DEDUPE_DUPLICATE);
    nsc_dedupe_free(e);
    nsc_dedupe_free(d);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

static const char *const agents[] = {"a", "b", "c"};

/* Agents a, b and c with batches 0..9 committed, b's record then broken on
 * disk (a value too short to hold its range count). */
static char *store_with_broken_agent(void)
{
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    nsc_dedupe *d = nsc_dedupe_new();
    for (uint64_t seq = 0; seq < 10; seq++)
        for (int i = 0; i < 3; i++)
            cr_assert_eq(nsc_dedupe_mark(d, agents[i], 0, seq), 0);
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    cr_assert_eq(nsc_dedupe_put_dirty(d, st), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    nsc_dedupe_free(d);
    nsc_store_close(st);
    cr_assert_eq(nsc_raw_put(dir, "meta", "agent/b", 7, "\0\0", 2, 0), 0);
    return dir;
}

/* A load that fails part way must not leave a set that passes committed
 * batches as new (the writer would store them twice): after the failure no
 * batch may be stored or marked, and the next load that works restores all. */
Test(dedupe, failed_load_takes_no_batch_until_a_load_works)
{
    char *dir = store_with_broken_agent();
    nsc_store *st;
    cr_assert_eq(nsc_store_open(dir, NULL, &st), 0);
    nsc_dedupe *d = nsc_dedupe_new();
    cr_assert_eq(nsc_dedupe_load(d, st), NSC_STORE_ECORRUPT);
    cr_assert_eq(nsc_dedupe_known(d), 0);
    for (int i = 0; i < 3; i++) {
        const char *a = agents[i];
        /* committed before: storing it now would store it twice */
        cr_assert_eq(nsc_dedupe_classify(d, a, 0, 5), NSC_DEDUPE_UNKNOWN, "%s", a);
        cr_assert_eq(nsc_dedupe_mark(d, a, 0, 10), NSC_DEDUPE_UNKNOWN, "%s", a);
    }
    nsc_store_close(st);

    uint8_t fixed[4 + 16] = {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10};
    cr_assert_eq(nsc_raw_put(dir, "meta", "agent/b", 7, fixed, sizeof fixed, 0), 0);
    cr_assert_eq(nsc_store_open(dir, NULL, &st), 0);
    cr_assert_eq(nsc_dedupe_load(d, st), 0);
    cr_assert_eq(nsc_dedupe_known(d), 1);
    for (int i = 0; i < 3; i++) {
        const char *a = agents[i];
        cr_assert_eq(nsc_dedupe_classify(d, a, 0, 9), NSC_DEDUPE_DUPLICATE, "%s", a);
        cr_assert_eq(nsc_dedupe_classify(d, a, 0, 10), NSC_DEDUPE_NEW, "%s", a);
        cr_assert_eq(nsc_dedupe_mark(d, a, 0, 10), 0, "%s", a);
    }
    nsc_dedupe_free(d);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* ---- property: the set against a plain sorted list, over the whole range -- */

static uint64_t rng(uint64_t *x)  /* xorshift64*: reproducible per seed */
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545f4914f6cdd1dull;
}

/* Sequences near both ends of the space, around 2^63, and anywhere. */
static uint64_t pick_seq(uint64_t *x)
{
    uint64_t r = rng(x), near = r >> 58;  /* 0..63 */
    switch (r % 4) {
    case 0: return near;
    case 1: return UINT64_MAX - near;
    case 2: return (1ull << 63) - 32 + near;
    default: return rng(x);
    }
}

typedef struct model {
    uint64_t *v;  /* marked sequences, sorted */
    size_t n;
} model;

static int model_has(const model *m, uint64_t seq)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i] == seq)
            return 1;
    return 0;
}

static void model_add(model *m, uint64_t seq)
{
    size_t i = m->n;
    while (i > 0 && m->v[i - 1] > seq) {
        m->v[i] = m->v[i - 1];
        i--;
    }
    m->v[i] = seq;
    m->n++;
}

/* Runs of consecutive sequences in the model: what the store must hold,
 * as [lo, hi) with hi 0 for a run that ends at 2^64-1. */
static size_t model_runs(const model *m, nsc_store_seq_range *out)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (n && out[n - 1].hi == m->v[i] && m->v[i] != 0) {
            out[n - 1].hi = m->v[i] + 1;
            continue;
        }
        out[n++] = (nsc_store_seq_range){m->v[i], m->v[i] + 1};
    }
    return n;
}

typedef struct ranges {
    nsc_store_seq_range *r;
    size_t n;
} ranges;

static int copy_ranges(void *arg, const char *agent, uint64_t epoch, const nsc_store_seq_range *r, size_t n)
{
    (void)agent, (void)epoch;
    ranges *out = arg;
    out->r = malloc((n ? n : 1) * sizeof *r);
    cr_assert_not_null(out->r);
    memcpy(out->r, r, n * sizeof *r);
    out->n = n;
    return 0;
}

/* What the store holds is exactly the model's runs; a reload answers like the model. */
static void check_store(nsc_store *st, nsc_dedupe *d, const model *m, uint64_t seed)
{
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    cr_assert_eq(nsc_dedupe_put_dirty(d, st), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    nsc_store_reader *rd;
    ranges got = {0};
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_agents(rd, copy_ranges, &got), 0);
    nsc_store_read_end(rd);
    nsc_store_seq_range want[512];
    size_t nwant = model_runs(m, want);
    cr_assert_eq(got.n, nwant, "seed %llu: %zu ranges stored, %zu runs", (unsigned long long)seed, got.n, nwant);
    for (size_t i = 0; i < nwant; i++)
        cr_assert(got.r[i].lo == want[i].lo && got.r[i].hi == want[i].hi, "seed %llu: range %zu",
                  (unsigned long long)seed, i);
    free(got.r);
    nsc_dedupe *e = nsc_dedupe_new();
    cr_assert_eq(nsc_dedupe_load(e, st), 0);
    for (size_t i = 0; i < m->n; i++)
        cr_assert_eq(nsc_dedupe_classify(e, "p", 1, m->v[i]), NSC_DEDUPE_DUPLICATE);
    uint64_t x = seed | 1;
    for (int i = 0; i < 200; i++) {
        uint64_t seq = pick_seq(&x);
        cr_assert_eq(nsc_dedupe_classify(e, "p", 1, seq) == NSC_DEDUPE_DUPLICATE, model_has(m, seq));
    }
    nsc_dedupe_free(e);
}

/* Random marks (each sent up to three times, as replays are) anywhere in the
 * 64-bit space: a sequence is held exactly when it was marked, 2^64-1 and 0
 * included; a replay is always a duplicate; the stored ranges are the model's
 * runs, and survive a reload. */
Test(dedupe, property_whole_sequence_space)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        char *dir;
        nsc_store *st = nsc_tmp_store_open(&dir);
        cr_assert_not_null(st);
        nsc_dedupe *d = nsc_dedupe_new();
        model m = {malloc(512 * sizeof(uint64_t)), 0};
        uint64_t x = seed * 0x9e3779b97f4a7c15ull;
        for (int op = 0; op < 400 && m.n < 500; op++) {
            uint64_t seq = pick_seq(&x);
            int had = model_has(&m, seq);
            cr_assert_eq(nsc_dedupe_classify(d, "p", 1, seq) == NSC_DEDUPE_DUPLICATE, had, "seed %llu op %d: seq %llu",
                         (unsigned long long)seed, op, (unsigned long long)seq);
            for (int again = 0; again < 1 + (int)(rng(&x) % 3); again++) {
                cr_assert_eq(nsc_dedupe_classify(d, "p", 1, seq), had || again ? NSC_DEDUPE_DUPLICATE : NSC_DEDUPE_NEW);
                cr_assert_eq(nsc_dedupe_mark(d, "p", 1, seq), 0);
                cr_assert_eq(nsc_dedupe_classify(d, "p", 1, seq), NSC_DEDUPE_DUPLICATE);
            }
            if (!had)
                model_add(&m, seq);
            if (op % 100 == 99)
                check_store(st, d, &m, seed);
        }
        check_store(st, d, &m, seed);
        free(m.v);
        nsc_dedupe_free(d);
        nsc_store_close(st);
        nsc_tmp_store_remove(dir);
    }
}

/* The case that was stored on every replay: seq 2^64-1, then 0..3, then both again. */
Test(dedupe, last_sequence_is_a_duplicate_when_replayed)
{
    nsc_dedupe *d = nsc_dedupe_new();
    cr_assert_eq(nsc_dedupe_mark(d, "a", 0, UINT64_MAX), 0);
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, UINT64_MAX), NSC_DEDUPE_DUPLICATE);
    for (uint64_t seq = 0; seq < 4; seq++) {
        cr_assert_neq(nsc_dedupe_classify(d, "a", 0, seq), NSC_DEDUPE_DUPLICATE);
        cr_assert_eq(nsc_dedupe_mark(d, "a", 0, seq), 0);
    }
    for (uint64_t seq = 0; seq < 4; seq++)
        cr_assert_eq(nsc_dedupe_classify(d, "a", 0, seq), NSC_DEDUPE_DUPLICATE);
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, UINT64_MAX), NSC_DEDUPE_DUPLICATE);
    cr_assert_neq(nsc_dedupe_classify(d, "a", 0, UINT64_MAX - 1), NSC_DEDUPE_DUPLICATE);
    cr_assert_eq(nsc_dedupe_mark(d, "a", 0, UINT64_MAX - 1), 0);  /* extends {2^64-1} downwards */
    cr_assert_neq(nsc_dedupe_classify(d, "a", 0, 4), NSC_DEDUPE_DUPLICATE);
    nsc_dedupe_free(d);
}

/* A store written by a collector that wrapped at 2^64-1 holds its ranges out of
 * order and overlapping; loaded, they answer as their union. */
Test(dedupe, wrapped_store_ranges_are_normalized)
{
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    static const nsc_store_seq_range old[] = {{0, 4}, {UINT64_MAX, 0}, {0, 2}, {9, 7}, {3, 6}};
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    cr_assert_eq(nsc_store_put_agent_seqs(st, "a", 0, old, 5), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    nsc_dedupe *d = nsc_dedupe_new();
    cr_assert_eq(nsc_dedupe_load(d, st), 0);
    for (uint64_t seq = 0; seq < 6; seq++)
        cr_assert_eq(nsc_dedupe_classify(d, "a", 0, seq), NSC_DEDUPE_DUPLICATE, "seq %llu", (unsigned long long)seq);
    cr_assert_neq(nsc_dedupe_classify(d, "a", 0, 6), NSC_DEDUPE_DUPLICATE);
    cr_assert_neq(nsc_dedupe_classify(d, "a", 0, 8), NSC_DEDUPE_DUPLICATE);  /* {9, 7} holds nothing */
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, UINT64_MAX), NSC_DEDUPE_DUPLICATE);
    cr_assert_eq(nsc_dedupe_mark(d, "a", 0, 6), 0);
    cr_assert_eq(nsc_dedupe_classify(d, "a", 0, 6), NSC_DEDUPE_DUPLICATE);
    nsc_dedupe_free(d);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}
