/* test_diagcarry.c: the root-cause passes' carry (engine/diag/diagnose.c,
 * nsc_rc_carry): a pass that reads a communicator's last `window` seqs,
 * with what the passes before carried of the seqs that left it, finds a
 * late rank with the figures diagnose of the whole job gives, and reads
 * no more than the window and what left it since the last pass; from the
 * settled point on it reads only what came since (each seq twice: once
 * new, once carried), and its verdicts, a slow link's too, are those of
 * diagnose of the whole job. Canned pages: one communicator of 4 ranks on
 * 2 hosts whose rank 1 arrives last at every collective, later and with
 * the others waiting longer as the seq grows (a window's sums differ from
 * the whole job's), and whose network link 1 -> 2 takes 4x the other's
 * steps (3 -> 0) from the first on, but at every fourth seq (as fast as
 * the other: read in time order, no run of its steps is fast): its onset,
 * seq 0, long left the window and is carried. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dint.h"
#include "utc.h"

#define WINDOW 8
#define NRANKS 4
#define WALL_NS 1795000000000000000ll  /* the job's wall clock, off its time line */

static uint64_t top;     /* the job's highest seq, as the live state says */
static uint64_t served;  /* collectives served since the last reset */
static uint64_t records; /* ledger records served since the last reset */

static const char comms_doc[] =
    "{\"job\":\"j\",\"comms\":[{\"comm\":\"0xc\",\"nranks\":4,\"ranks_seen\":4,\"ranks\":[0,1,2,3]}]}";
static const char empty_page[] = "{\"kind\":\"header\"}\n{\"kind\":\"end\",\"next_cursor\":null}\n";

/* The seqs a query asks for (seq=A-B, or all). */
static void seq_span(const char *qs, uint64_t *lo, uint64_t *hi)
{
    const char *s = strstr(qs, "seq=");
    *lo = 0, *hi = UINT64_MAX;
    if (s)
        cr_assert_eq(sscanf(s, "seq=%" SCNu64 "-%" SCNu64, lo, hi), 2, "%s", qs);
}

/* When collective seq began (its first enqueue, each rank's record's). */
static uint64_t start_of(uint64_t seq)
{
    return 1000000000ull + seq * 100000000ull;
}

/* Collective seq: rank 1 arrives (1 + seq % 5) ms after the others, all of
 * it its host's, and each of the others waits that long. */
static size_t collective(char *buf, size_t cap, uint64_t seq)
{
    uint64_t start = start_of(seq), late = (1 + seq % 5) * 1000000ull;
    return (size_t)snprintf(
        buf, cap,
        "{\"kind\":\"collective\",\"func\":\"AllReduce\",\"seq\":%" PRIu64 ",\"nranks\":4,\"ranks_seen\":4,"
        "\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"nchannels\":2,\"last_rank\":1,\"late_ns\":%" PRIu64
        ",\"late_host_ns\":%" PRIu64 ",\"late_gpu_ns\":0,\"late_of_its_own\":true,\"ranks\":["
        "{\"rank\":0,\"wait_ns\":%" PRIu64 ",\"arrival_ns\":%" PRIu64 "},{\"rank\":1,\"wait_ns\":0,\"arrival_ns\":%" PRIu64
        "},{\"rank\":2,\"wait_ns\":%" PRIu64 ",\"arrival_ns\":%" PRIu64 "},{\"rank\":3,\"wait_ns\":%" PRIu64
        ",\"arrival_ns\":%" PRIu64 "}]}\n",
        seq, start, start + late + 500000, late, late, late, start, start + late, late, start, late, start);
}

/* The ledger of seqs [lo, hi]: per seq a record of each rank, those that
 * send across hosts (1 -> 2 at 400 us a step, 100 us at every fourth seq;
 * 3 -> 0 at 100 us) with their send edge. */
static size_t ledger(char *buf, size_t cap, uint64_t lo, uint64_t hi)
{
    size_t n = (size_t)snprintf(buf, cap,
                                "{\"kind\":\"header\",\"comm\":\"0xc\",\"nranks\":4,\"ranks\":[{\"rank\":0,"
                                "\"host\":\"h0\"},{\"rank\":1,\"host\":\"h0\"},{\"rank\":2,\"host\":\"h1\"},"
                                "{\"rank\":3,\"host\":\"h1\"}]}\n");
    for (uint64_t s = lo; s <= top && s <= hi; s++)
        for (int r = 0; r < NRANKS; r++, records++) {
            n += (size_t)snprintf(buf + n, cap - n,
                                  "{\"kind\":\"record\",\"seq\":%" PRIu64 ",\"rank\":%d,\"func\":\"AllReduce\","
                                  "\"enqueue_ns\":%" PRIu64 ",\"state\":\"completed\",\"edges\":[",
                                  s, r, start_of(s));
            if (r % 2)
                n += (size_t)snprintf(buf + n, cap - n,
                                      "{\"peer\":%d,\"channel\":0,\"is_send\":1,\"steps\":4,\"bytes\":4194304,"
                                      "\"wait_send_ns\":%d}",
                                      (r + 1) % NRANKS, r == 1 && s % 4 != 3 ? 1600000 : 400000);
            n += (size_t)snprintf(buf + n, cap - n, "]}\n");
        }
    n += (size_t)snprintf(buf + n, cap - n, "{\"kind\":\"end\",\"next_cursor\":null}\n");
    cr_assert_lt(n, cap);
    return n;
}

static int serve(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg, char *err,
                 size_t errcap)
{
    (void)arg;
    static char page[1 << 17];
    if (strcmp(endpoint, "comms") == 0)
        return fn(fn_arg, comms_doc, strlen(comms_doc));
    if (strcmp(endpoint, "p2p") == 0)
        return fn(fn_arg, "{\"settled_ns\":0,\"unmatched\":[]}", 31);
    if (strcmp(endpoint, "timeline") == 0)
        return fn(fn_arg, empty_page, strlen(empty_page));
    uint64_t lo, hi;
    seq_span(qs, &lo, &hi);
    if (strcmp(endpoint, "ledger") == 0)
        return fn(fn_arg, page, ledger(page, sizeof page, lo, hi));
    if (strcmp(endpoint, "status") == 0) {
        int n = snprintf(page, sizeof page,
                         "{\"jobs\":[{\"job\":\"j\",\"comms\":[{\"comm\":\"0xc\",\"funcs\":[{\"func\":\"AllReduce\","
                         "\"max_seq\":%" PRIu64 "}]}]}],\"processes\":[]}",
                         top);
        return fn(fn_arg, page, (size_t)n);
    }
    if (strcmp(endpoint, "collectives") != 0) {
        snprintf(err, errcap, "no %s here", endpoint);
        return -1;
    }
    size_t n = (size_t)snprintf(page, sizeof page, "{\"kind\":\"header\",\"comm\":\"0xc\",\"wall_offset_ns\":%lld}\n",
                                WALL_NS);
    for (uint64_t s = lo; s <= top && s <= hi; s++, served++)
        n += collective(page + n, sizeof page - n, s);
    n += (size_t)snprintf(page + n, sizeof page - n, "{\"kind\":\"end\",\"next_cursor\":null}\n");
    cr_assert_lt(n, sizeof page);
    return fn(fn_arg, page, n);
}

/* A diagnosis (window 0: the whole job). */
static void find(nsc_findings *f, uint64_t window, nsc_rc_carry *carry)
{
    static nsc_diag_src src = {.get = serve, .name = "canned"};
    memset(f, 0, sizeof *f);
    f->src = &src;
    f->window = window;
    f->carry = carry;
    cr_assert_eq(nsc_diag_find("j", NULL, f), NSC_DIAG_OK, "%s", src.err);
}

/* ... and its host_late problem. */
static nsc_problem late_of(nsc_findings *f, uint64_t window, nsc_rc_carry *carry)
{
    find(f, window, carry);
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->p[i].kind, "host_late") == 0)
            return f->p[i];
    cr_assert_fail("no host_late at top %" PRIu64 " (%zu problems)", top, f->n);
    return f->p[0];
}

Test(diagcarry, a_pass_finds_a_late_rank_with_the_whole_jobs_figures)
{
    static const uint64_t tops[] = {5, 20, 21, 40, 41};
    nsc_findings *f = calloc(1, sizeof *f);
    nsc_rc_carry carry = {0};
    cr_assert_not_null(f);
    for (size_t i = 0; i < sizeof tops / sizeof *tops; i++) {
        uint64_t last = i ? tops[i - 1] : 0;
        top = tops[i];
        served = 0;
        nsc_problem pass = late_of(f, WINDOW, &carry);
        uint64_t read = served;
        nsc_problem whole = late_of(f, 0, NULL);
        cr_assert_str_eq(pass.figures, whole.figures, "top %" PRIu64, top);
        cr_assert_str_eq(pass.text, whole.text, "top %" PRIu64, top);
        cr_assert_eq(pass.seq, whole.seq);
        /* the window, what left it since the last pass, and the collective
         * before each of the two reads (the first one's previous) */
        if (i)
            cr_assert_leq(read, WINDOW + (top - last) + 2, "top %" PRIu64 ": %" PRIu64 " read", top, read);
    }
    nsc_rc_carry_free(&carry);
    free(f);
}

/* Without a carry the pass judges the window alone, as before. */
Test(diagcarry, a_pass_without_a_carry_reads_the_window)
{
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    top = 40;
    served = 0;
    nsc_problem p = late_of(f, WINDOW, NULL);
    cr_assert_eq(served, WINDOW);
    cr_assert_not_null(strstr(p.figures, "\"collectives\":8,"), "%s", p.figures);
    free(f);
}

/* Fed in pieces (a pass at each top), the passes give the verdicts of
 * diagnose of the whole job, their places, onsets and figures (the slow
 * link's onset its first step's, from the steps carried); once the
 * last pass settled what it read, a pass reads each new seq's collective
 * and records twice (new, then carried) and the one before it once more,
 * not the window. */
Test(diagcarry, pieces_give_the_whole_jobs_verdicts_reading_what_came)
{
    static const uint64_t tops[] = {5, 20, 21, 40, 41, 42, 43, 60};
    nsc_findings *f = calloc(1, sizeof *f), *whole = calloc(1, sizeof *whole);
    nsc_rc_carry carry = {0};
    char first_step[NSC_UTC_MAX];
    nsc_utc_iso((int64_t)start_of(0) + WALL_NS, first_step, sizeof first_step);
    cr_assert(f && whole);
    for (size_t i = 0; i < sizeof tops / sizeof *tops; i++) {
        top = tops[i];
        served = records = 0;
        find(f, WINDOW, &carry);
        uint64_t colls = served, recs = records;
        find(whole, 0, NULL);
        cr_assert_eq(f->n, whole->n, "top %" PRIu64 ": %zu problems, whole %zu", top, f->n, whole->n);
        cr_assert_eq(f->collectives, whole->collectives, "top %" PRIu64, top);
        int slow = 0;
        for (size_t k = 0; k < f->n; k++) {
            const nsc_problem *a = &f->p[k], *b = &whole->p[k];
            cr_assert_str_eq(a->kind, b->kind, "top %" PRIu64, top);
            cr_assert_str_eq(a->text, b->text, "top %" PRIu64, top);
            cr_assert_str_eq(a->figures, b->figures, "top %" PRIu64 " %s", top, a->kind);
            cr_assert_str_eq(a->began, b->began, "top %" PRIu64, top);
            cr_assert_eq(a->seq, b->seq);
            cr_assert_eq(a->rank, b->rank);
            cr_assert_eq(a->peer, b->peer);
            if (strcmp(a->kind, "slow_link") == 0 && a->rank == 1 && a->peer == 2) {
                cr_assert_str_eq(a->began, first_step, "top %" PRIu64, top);
                slow = 1;
            }
        }
        cr_assert(slow || top < 20, "top %" PRIu64 ": no slow link 1 -> 2", top);
        if (top == 42 || top == 43) {
            cr_assert_leq(colls, 2 + 2, "top %" PRIu64 ": %" PRIu64 " collectives read", top, colls);
            cr_assert_leq(recs, 2 * NRANKS, "top %" PRIu64 ": %" PRIu64 " records read", top, recs);
        }
    }
    nsc_rc_carry_free(&carry);
    free(f);
    free(whole);
}
