/* store_check.c: nsc-e2e-store-check EMU.json DB JOB [--lost N | --lost-by-type T=N,...]
 *
 * Compares what the emulator emitted (its --summary) with what the collector
 * stored (the LMDB store read with the nsc_store reader), after the whole
 * pipeline emulator -> plugin -> agents -> collector:
 *   - per (communicator, rank): the stored events that are the rank's own, by
 *     type, equal the events its plugin delivers (ProxyCtrl aside: it has no
 *     communicator and goes to the process's own blocks): a process that ran to
 *     its finalize every event it started, those never stopped flagged open
 *     (exactly the summary's open_events), a killed one those it stopped;
 *   - every stored PXN (foreign) event is resolved and has its parent among
 *     the events of the same communicator and rank, started no later;
 *     together they equal the foreign stop calls the emulator made, by type;
 *   - no event is stored twice (same type, id, start and stop in one rank),
 *     and no id the agents gave a re-attached PXN event is given twice;
 *   - the store's event total equals everything emitted.
 * With --lost N (N events that the pipeline counted as refused or dropped),
 * per rank and type at most what was emitted is stored, and the store's total
 * plus N equals everything emitted; still nothing twice. With --lost-by-type
 * (e.g. Coll=2,ProxyStep=40; empty: none), the same, and for each type the
 * store's events of that type plus its losses equal those emitted.
 * Prints each mismatch; exit 0 when there is none, 1 otherwise, 2 on bad use.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "event.h"
#include "order.h"
#include "store.h"

static int failures;
static bool lossy;     /* --lost given */
static uint64_t lost;  /* events counted as refused or dropped */
static bool by_type;   /* --lost-by-type given */
static uint64_t lost_type[NSC_T_COUNT];

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("store-check: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

typedef struct evlist {
    nsc_event *ev;
    size_t n, cap;
} evlist;

static int collect(void *arg, const nsc_block_key *key, const nsc_block *blk, const nsc_event *ev)
{
    (void)key;
    (void)blk;
    evlist *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        nsc_event *p = realloc(l->ev, cap * sizeof *p);
        if (!p)
            return -1;
        l->ev = p;
        l->cap = cap;
    }
    l->ev[l->n++] = *ev;
    return 0;
}

static int by_identity(const void *a, const void *b)
{
    const nsc_event *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->type, y->type), NSC_CMP(x->id, y->id), NSC_CMP(x->start_ns, y->start_ns),
                     NSC_CMP(x->stop_ns, y->stop_ns));
}

static int has_parent(const evlist *l, const nsc_event *child)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->ev[i].id == child->parent && l->ev[i].start_ns <= child->start_ns && &l->ev[i] != child)
            return 1;
    return 0;
}

/* One (communicator, rank): own events by type, foreign events checked.
 * Adds the foreign events found, by type, to foreign[], and all found to stored[]. */
static void check_rank(nsc_store_reader *rd, uint32_t job, const nsc_json *emu, const nsc_json *r,
                       uint64_t foreign[NSC_T_COUNT], uint64_t stored[NSC_T_COUNT])
{
    uint64_t comm = 0, own[NSC_T_COUNT] = {0}, open = 0;
    int64_t rank = 0;
    nsc_json_u64(nsc_json_get(r, "comm_id"), &comm);
    nsc_json_i64(nsc_json_get(r, "rank"), &rank);
    evlist l = {0};
    int rc = nsc_store_scan(rd, job, comm, (int32_t)rank, 0, UINT64_MAX, collect, &l);
    if (rc) {
        fail("comm %" PRIx64 " rank %d: scan: %s", comm, (int)rank, nsc_store_strerror(rc));
        free(l.ev);
        return;
    }
    for (size_t i = 0; i < l.n; i++) {
        const nsc_event *e = &l.ev[i];
        stored[e->type]++;
        if (!(e->flags & NSC_EVF_FOREIGN)) {
            own[e->type]++;
            open += (e->flags & NSC_EVF_OPEN) != 0;
            continue;
        }
        foreign[e->type]++;
        if (e->flags & NSC_EVF_UNRESOLVED)
            fail("comm %" PRIx64 " rank %d: unresolved foreign %s", comm, (int)rank, nsc_type_name(e->type));
        else if (!has_parent(&l, e))
            fail("comm %" PRIx64 " rank %d: foreign %s %" PRIx64 " has no parent %" PRIx64 " in its rank", comm,
                 (int)rank, nsc_type_name(e->type), e->id, e->parent);
    }
    const nsc_json *delivered = e2e_rank_delivered(emu, r);
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        if (t != NSC_T_PROXY_CTRL && (lossy ? own[t] > e2e_count(delivered, nsc_type_name(t))
                                            : own[t] != e2e_count(delivered, nsc_type_name(t))))
            fail("comm %" PRIx64 " rank %d: %s emitted %" PRIu64 ", stored %" PRIu64, comm, (int)rank,
                 nsc_type_name(t), e2e_count(delivered, nsc_type_name(t)), own[t]);
    uint64_t want_open = e2e_pid_killed(emu, e2e_count(r, "pid")) ? 0 : e2e_count(r, "open_events");
    if (lossy ? open > want_open : open != want_open)
        fail("comm %" PRIx64 " rank %d: %" PRIu64 " events never stopped, %" PRIu64 " stored flagged open", comm,
             (int)rank, want_open, open);
    if (l.n > 1)  /* a rank whose events were all dropped has none (l.ev NULL) */
        qsort(l.ev, l.n, sizeof *l.ev, by_identity);
    for (size_t i = 1; i < l.n; i++)
        if (by_identity(&l.ev[i - 1], &l.ev[i]) == 0)
            fail("comm %" PRIx64 " rank %d: %s %" PRIx64 " stored twice", comm, (int)rank,
                 nsc_type_name(l.ev[i].type), l.ev[i].id);
        else if ((l.ev[i].flags & NSC_EVF_FOREIGN) && l.ev[i - 1].type == l.ev[i].type &&
                 l.ev[i - 1].id == l.ev[i].id)
            fail("comm %" PRIx64 " rank %d: re-attached %s id %" PRIx64 " given twice", comm, (int)rank,
                 nsc_type_name(l.ev[i].type), l.ev[i].id);
    free(l.ev);
}

/* Per type: stored + lost == emitted. ProxyCtrl is in the processes' own
 * blocks, not the ranks' scanned: what the store holds beyond the others. */
static void check_types(uint64_t stored[NSC_T_COUNT], const uint64_t emitted[NSC_T_COUNT], uint64_t total)
{
    uint64_t others = 0;
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        others += t != NSC_T_PROXY_CTRL ? stored[t] : 0;
    stored[NSC_T_PROXY_CTRL] = total - others;
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        if (stored[t] + lost_type[t] != emitted[t])
            fail("%s: emitted %" PRIu64 ", stored %" PRIu64 ", counted lost %" PRIu64, nsc_type_name(t),
                 emitted[t], stored[t], lost_type[t]);
}

static void check(nsc_store_reader *rd, uint32_t job, const nsc_json *emu)
{
    uint64_t foreign[NSC_T_COUNT] = {0}, stored[NSC_T_COUNT] = {0}, emitted_type[NSC_T_COUNT] = {0};
    uint64_t emitted = 0, ranks = 0;
    e2e_emitted_by_type(emu, emitted_type);
    const nsc_json *rs = nsc_json_get(emu, "ranks");
    for (const nsc_json *r = nsc_json_first(rs); r; r = nsc_json_next(rs, r)) {
        bool profiled = false;
        nsc_json_bool(nsc_json_get(r, "profiled"), &profiled);
        if (!profiled)
            continue;
        ranks++;
        check_rank(rd, job, emu, r, foreign, stored);
    }
    const nsc_json *fs = nsc_json_get(nsc_json_get(nsc_json_get(emu, "totals"), "foreign"), "stop");
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        emitted += emitted_type[t];
        if (lossy ? foreign[t] > e2e_count(fs, nsc_type_name(t)) : foreign[t] != e2e_count(fs, nsc_type_name(t)))
            fail("foreign %s: emitted %" PRIu64 ", stored on their ranks %" PRIu64, nsc_type_name(t),
                 e2e_count(fs, nsc_type_name(t)), foreign[t]);
    }
    nsc_store_stats st;
    int rc = nsc_store_stats_get(rd, &st);
    if (rc)
        fail("stats: %s", nsc_store_strerror(rc));
    else if (st.events + lost != emitted)
        fail("events emitted %" PRIu64 ", stored %" PRIu64 ", counted lost %" PRIu64, emitted, st.events,
             lost);
    else if (by_type)
        check_types(stored, emitted_type, st.events);
    if (ranks == 0 || emitted == 0)
        fail("the summary has no profiled rank or no event");
    printf("store-check: %" PRIu64 " ranks, %" PRIu64 " events emitted, %" PRIu64 " stored, %" PRIu64
           " counted lost\n", ranks, emitted, st.events, lost);
}

/* "Type=N,Type=N" (empty: nothing lost) into lost_type[] and lost. */
static int parse_by_type(char *list)
{
    for (char *item = strtok(list, ","); item; item = strtok(NULL, ",")) {
        char *eq = strchr(item, '='), *end;
        if (!eq)
            return -1;
        *eq = '\0';
        unsigned t = 0;
        while (t < NSC_T_COUNT && strcmp(nsc_type_name(t), item) != 0)
            t++;
        uint64_t n = strtoull(eq + 1, &end, 10);
        if (t == NSC_T_COUNT || *end || !eq[1])
            return -1;
        lost_type[t] += n;
        lost += n;
    }
    return 0;
}

static int parse_args(int argc, char **argv)
{
    if (argc == 4)
        return 0;
    if (argc != 6)
        return -1;
    lossy = true;
    if (strcmp(argv[4], "--lost-by-type") == 0) {
        by_type = true;
        return parse_by_type(argv[5]);
    }
    char *end;
    lost = strtoull(argv[5], &end, 10);
    return strcmp(argv[4], "--lost") == 0 && !*end && *argv[5] ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (parse_args(argc, argv) != 0) {
        fprintf(stderr, "usage: nsc-e2e-store-check EMU.json DB JOB [--lost N | --lost-by-type T=N,...]\n");
        return 2;
    }
    nsc_json_doc emu;
    if (e2e_load_json("store-check", argv[1], &emu) != 0)
        return 2;
    nsc_store_opts o = {.read_only = 1};
    nsc_store *st;
    nsc_store_reader *rd;
    uint32_t job;
    int rc = nsc_store_open(argv[2], &o, &st);
    if (rc) {
        fprintf(stderr, "store-check: %s: %s\n", argv[2], nsc_store_strerror(rc));
        nsc_json_free(&emu);
        return 2;
    }
    if ((rc = nsc_store_read_begin(st, &rd)) == 0) {
        if ((rc = nsc_store_job_id(rd, argv[3], &job)) == 0)
            check(rd, job, nsc_json_root(&emu));
        else
            fail("job %s: %s", argv[3], nsc_store_strerror(rc));
        nsc_store_read_end(rd);
    } else {
        fail("read: %s", nsc_store_strerror(rc));
    }
    nsc_store_close(st);
    nsc_json_free(&emu);
    return failures ? 1 : 0;
}
