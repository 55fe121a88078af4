/* test_timeline_order.c: the timeline's merge order and per-event records on
 * blocks whose events are out of start order (blocks store events by id),
 * with equal start times, starts that differ in high and low bytes only, and
 * ranks interleaved. The expected order is computed here by sorting the
 * input by (start, rank, id). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "qjson.h"
#include "order.h"
#include "query.h"
#include "storeutil.h"

#define COMM 0x77ull
#define RANKS 3
#define PER_RANK 40
#define T0 1000000000000ull

typedef struct expect {
    uint64_t start, id;
    int32_t rank;
    uint32_t nstates;
} expect;

static expect want[RANKS * PER_RANK];

/* Start of rank r's event i: out of id order, ties, far and near values. */
static uint64_t start_of(int r, uint64_t i)
{
    switch (i % 5) {
    case 0: return T0 + (PER_RANK - i) * 1000 + (uint64_t)r;  /* descending with id */
    case 1: return T0 + 5000;                                 /* one tie across ranks */
    case 2: return T0 + ((i % 3) << 40);                      /* only high bytes differ */
    case 3: return T0 + i * 7 + (uint64_t)r * 3;              /* ascending, interleaved */
    default: return T0 + 5000 + (uint64_t)(r == 1);           /* near the tie */
    }
}

static void fill(nsc_store *st)
{
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    for (int r = 0; r < RANKS; r++) {
        nsc_event ev[PER_RANK];
        nsc_state_rec states[2 * PER_RANK];
        nsc_completion done[PER_RANK];
        size_t ns = 0, nd = 0;
        for (uint64_t i = 0; i < PER_RANK; i++) {
            nsc_event *e = &ev[i];
            memset(e, 0, sizeof *e);
            e->id = 10 + 2 * i; /* gaps: states of ids without an event sit between */
            e->start_ns = start_of(r, i);
            e->stop_ns = e->start_ns + 100;
            e->rank = r;
            e->type = i % 4 == 0 ? NSC_T_COLL : NSC_T_PROXY_STEP;
            uint32_t k = i % 3; /* 0, 1 or 2 states */
            for (uint32_t s = 0; s < k; s++)
                states[ns++] = (nsc_state_rec){e->id, e->start_ns + 10 + s, s, 5, NSC_S_PROXY_STEP_SEND_WAIT};
            states[ns++] = (nsc_state_rec){e->id + 1, e->start_ns, 9, 5, NSC_S_PROXY_STEP_SEND_WAIT};
            if (e->type == NSC_T_COLL && i % 8 == 0)
                done[nd++] = (nsc_completion){e->id, e->start_ns + 777};
            want[r * PER_RANK + i] = (expect){e->start_ns, e->id, r, k};
        }
        nsc_proc p = nsc_test_proc("order", "h", 500 + (uint32_t)r, r);
        nsc_ctx_def ctx = nsc_test_ctx(0, COMM, r, RANKS);
        nsc_store_batch b = {&p, &ctx, 1, NULL, 0, ev, PER_RANK, states, ns, done, nd};
        cr_assert_eq(nsc_store_put(st, &b), 0);
    }
    cr_assert_eq(nsc_store_commit(st), 0);
}

static int by_key(const void *x, const void *y)
{
    const expect *a = x, *b = y;
    return NSC_ORDER(NSC_CMP(a->start, b->start), NSC_CMP(a->rank, b->rank), NSC_CMP(a->id, b->id));
}

static int grow(void *arg, const void *data, size_t len)
{
    char **buf = arg;
    size_t have = *buf ? strlen(*buf) : 0;
    char *p = realloc(*buf, have + len + 1);
    cr_assert(p);
    memcpy(p + have, data, len);
    p[have + len] = 0;
    *buf = p;
    return 0;
}

Test(timeline_order, merged_by_start_rank_id_with_states_and_completions)
{
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    fill(st);
    qsort(want, RANKS * PER_RANK, sizeof *want, by_key);
    nsc_query *q;
    char err[256], *out = NULL;
    cr_assert_eq(nsc_query_parse("timeline", "comm=0x77", &q, err, sizeof err), 0, "%s", err);
    nsc_store_reader *rd;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_query_run(q, rd, grow, &out, err, sizeof err), 0, "%s", err);
    nsc_store_read_end(rd);
    size_t n = 0;
    for (char *line = strchr(out, '\n') + 1, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        nsc_json_doc d;
        nsc_json_error e;
        cr_assert_eq(nsc_json_parse(line, (size_t)(nl - line), NULL, &d, &e), 0, "%s", e.msg);
        const nsc_json *o = nsc_json_root(&d);
        if (strcmp(nsc_json_str(nsc_json_get(o, "kind")), "end") == 0) {
            cr_assert_eq(qj_u64(o, "events"), RANKS * PER_RANK);
        } else {
            cr_assert_lt(n, RANKS * PER_RANK);
            const expect *x = &want[n++];
            cr_assert_eq(qj_u64(o, "start_ns"), x->start, "line %zu", n);
            cr_assert_eq(qj_u64(o, "rank"), (uint64_t)x->rank, "line %zu", n);
            cr_assert_eq(qj_u64(o, "id"), x->id, "line %zu", n);
            const nsc_json *sts = nsc_json_get(o, "states");
            cr_assert_eq(sts->count, x->nstates, "line %zu: states", n);
            for (uint32_t s = 0; s < sts->count; s++)
                cr_assert_eq(qj_u64(nsc_json_at(sts, s), "ts_ns"), x->start + 10 + s);
            const nsc_json *c = nsc_json_get(o, "complete_ns");
            if (c) { /* Coll: the completion of every other one */
                int has = (x->id - 10) / 2 % 8 == 0;
                cr_assert_eq(c->kind == NSC_JSON_NUMBER, has, "line %zu", n);
                if (has)
                    cr_assert_eq(qj_u64(o, "complete_ns"), x->start + 777);
            }
        }
        nsc_json_free(&d);
    }
    cr_assert_eq(n, RANKS * PER_RANK);
    free(out);
    nsc_query_free(q);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}
