/* test_diagcarry.c: the root-cause passes' carry (engine/diag/diagnose.c,
 * nsc_rc_carry): a pass that reads a communicator's last `window` seqs,
 * with what the passes before carried of the seqs that left it, finds a
 * late rank with the figures diagnose of the whole job gives, and reads
 * no more than the window and what left it since the last pass. Canned
 * pages: one communicator of 4 ranks whose rank 1 arrives last at every
 * collective, later and with the others waiting longer as the seq grows
 * (a window's sums differ from the whole job's). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dint.h"

#define WINDOW 8
#define NRANKS 4

static uint64_t top;     /* the job's highest seq, as the live state says */
static uint64_t served;  /* collectives served since the last reset */

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

/* Collective seq: rank 1 arrives (1 + seq % 5) ms after the others, all of
 * it its host's, and each of the others waits that long. */
static size_t collective(char *buf, size_t cap, uint64_t seq)
{
    uint64_t start = 1000000000ull + seq * 100000000ull, late = (1 + seq % 5) * 1000000ull;
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

static int serve(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg, char *err,
                 size_t errcap)
{
    (void)arg;
    static char page[1 << 17];
    if (strcmp(endpoint, "comms") == 0)
        return fn(fn_arg, comms_doc, strlen(comms_doc));
    if (strcmp(endpoint, "p2p") == 0)
        return fn(fn_arg, "{\"settled_ns\":0,\"unmatched\":[]}", 31);
    if (strcmp(endpoint, "ledger") == 0 || strcmp(endpoint, "timeline") == 0)
        return fn(fn_arg, empty_page, strlen(empty_page));
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
    uint64_t lo, hi;
    seq_span(qs, &lo, &hi);
    size_t n = (size_t)snprintf(page, sizeof page, "{\"kind\":\"header\",\"comm\":\"0xc\"}\n");
    for (uint64_t s = lo; s <= top && s <= hi; s++, served++)
        n += collective(page + n, sizeof page - n, s);
    n += (size_t)snprintf(page + n, sizeof page - n, "{\"kind\":\"end\",\"next_cursor\":null}\n");
    cr_assert_lt(n, sizeof page);
    return fn(fn_arg, page, n);
}

/* The host_late problem of a diagnosis (window 0: the whole job). */
static nsc_problem late_of(nsc_findings *f, uint64_t window, nsc_rc_carry *carry)
{
    static nsc_diag_src src = {.get = serve, .name = "canned"};
    memset(f, 0, sizeof *f);
    f->src = &src;
    f->window = window;
    f->carry = carry;
    cr_assert_eq(nsc_diag_find("j", NULL, f), NSC_DIAG_OK, "%s", src.err);
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
