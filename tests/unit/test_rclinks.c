/* test_rclinks.c: the links analysis's judgement of one link (engine/diag,
 * rclinks.c): a link is slow when its typical step is slow throughout, not
 * when a pause of a loaded host made a run of its steps late; on two hosts,
 * where every link may be slow, against the transport's model; and a slow
 * NIC one communicator places alone narrows another's either-or one, as
 * does the one host all the either-or ones name; a slow link's and a slow
 * NIC's problem began when their first slow run of steps did. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcint.h"
#include "utc.h"

#define STEPS 40
#define NLINKS 6

/* A ring of 3 ranks on 2 channels, every step of every link healthy_ns. */
static rc_pass ring(uint64_t healthy_ns)
{
    rc_pass p = {.nranks = 3, .nlinks = NLINKS, .links_cap = NLINKS};
    p.links = calloc(NLINKS, sizeof *p.links);
    cr_assert_not_null(p.links);
    for (int i = 0; i < NLINKS; i++) {
        rc_link *k = &p.links[i];
        k->src = i % 3, k->dst = (i + 1) % 3, k->channel = (uint8_t)(i / 3);
        k->ns = malloc(STEPS * sizeof *k->ns);
        cr_assert_not_null(k->ns);
        k->n = k->cap = STEPS;
        for (size_t s = 0; s < STEPS; s++)
            k->ns[s] = healthy_ns;
    }
    return p;
}

static void ring_free(rc_pass *p)
{
    for (size_t i = 0; i < p->nlinks; i++)
        free(p->links[i].ns);
    free(p->links);
}

static void set_steps(rc_link *k, size_t from, size_t to, uint64_t ns)
{
    for (size_t s = from; s < to; s++)
        k->ns[s] = ns;
}

/* Judge the links: link `slow` slow, every other ok; frees the pass. */
static void only_slow(rc_pass *p, size_t slow)
{
    uint64_t limit;
    nsc_rc_link_reference(p, &limit);
    for (size_t i = 0; i < p->nlinks; i++)
        cr_assert_eq(p->links[i].state, i == slow ? NSC_LINK_SLOW : NSC_LINK_OK, "link %zu", i);
    ring_free(p);
}

/* Judge the links, every one ok; frees the pass, returns the reference. */
static uint64_t all_ok(rc_pass *p)
{
    uint64_t limit, ref = nsc_rc_link_reference(p, &limit);
    for (size_t i = 0; i < p->nlinks; i++)
        cr_assert_eq(p->links[i].state, NSC_LINK_OK, "link %zu", i);
    ring_free(p);
    return ref;
}

Test(rclinks, a_link_slow_throughout_is_slow)
{
    rc_pass p = ring(20000);
    set_steps(&p.links[0], 0, STEPS, 80000);
    uint64_t limit, ref = nsc_rc_link_reference(&p, &limit);
    cr_assert_eq(ref, 20000);
    cr_assert_eq(p.links[0].state, NSC_LINK_SLOW);
    for (size_t i = 1; i < NLINKS; i++)
        cr_assert_eq(p.links[i].state, NSC_LINK_OK, "link %zu", i);
    ring_free(&p);
}

/* Eight steps of 1 ms in a row: 8 ms late in all, 3x on the whole link after
 * trimming, but in one run of its steps only. */
Test(rclinks, a_pause_in_one_run_of_steps_is_not_a_slow_link)
{
    rc_pass p = ring(20000);
    set_steps(&p.links[2], 10, 18, 1000000);
    uint64_t limit;
    nsc_rc_link_reference(&p, &limit);
    cr_assert_geq(p.links[2].typical, limit, "slow on the whole: the case the runs are for");
    for (size_t i = 0; i < NLINKS; i++)
        cr_assert_eq(p.links[i].state, NSC_LINK_OK, "link %zu", i);
    ring_free(&p);
}

Test(rclinks, a_link_slow_from_the_first_quarter_on_is_slow)
{
    rc_pass p = ring(20000);
    set_steps(&p.links[4], STEPS / 4, STEPS, 90000);
    uint64_t limit;
    nsc_rc_link_reference(&p, &limit);
    cr_assert_eq(p.links[4].state, NSC_LINK_SLOW);
    ring_free(&p);
}

/* A late proxy reports a slow link's steps in bursts: three of four almost
 * at once, the fourth with all their time. Slow in every run by its sum. */
Test(rclinks, a_slow_link_reported_in_bursts_is_slow)
{
    rc_pass p = ring(20000);
    for (size_t s = 0; s < STEPS; s++)
        p.links[1].ns[s] = s % 4 == 3 ? 640000 : 1000;
    uint64_t limit;
    nsc_rc_link_reference(&p, &limit);
    cr_assert_eq(p.links[1].state, NSC_LINK_SLOW);
    ring_free(&p);
}

/* 10x slow from the middle of the job on: slow against its own history
 * (in half its runs only, not throughout). */
Test(rclinks, a_link_slow_from_mid_job_is_slow)
{
    rc_pass p = ring(20000);
    set_steps(&p.links[3], STEPS / 2, STEPS, 200000);
    only_slow(&p, 3);
}

/* The same after a loaded machine's pause at the job's start: its history
 * is its usual runs, not the paused one. */
Test(rclinks, a_link_slow_from_mid_job_after_a_pause_at_the_start_is_slow)
{
    rc_pass p = ring(20000);
    set_steps(&p.links[3], 0, 5, 2000000);
    set_steps(&p.links[3], STEPS / 2, STEPS, 200000);
    only_slow(&p, 3);
}

/* A pause of a loaded host over the job's last steps: two runs, not a
 * link slow since then. */
Test(rclinks, a_pause_at_the_end_is_not_a_slow_link)
{
    rc_pass p = ring(20000);
    set_steps(&p.links[3], STEPS - 10, STEPS, 1000000);
    all_ok(&p);
}

/* A pause of the whole job over its last three runs (every link's steps
 * 1 ms there), one link a little slower before it: no link is slow since
 * then, as every link was. */
Test(rclinks, a_pause_of_every_link_at_the_end_is_not_a_slow_link)
{
    rc_pass p = ring(20000);
    for (size_t i = 0; i < NLINKS; i++)
        set_steps(&p.links[i], STEPS - 15, STEPS, 1000000);
    set_steps(&p.links[3], STEPS - 20, STEPS - 15, 45000);
    all_ok(&p);
}

/* Two hosts, one rank each, both ways on 2 channels: each step moves
 * 2 MiB in step_ns (84 us each at the emulator's 25 GB/s NIC shared by
 * the two channels: 168 us; a 10x slow NIC 1.68 ms). */
#define STEP_BYTES 2097152ull
static char two_host_names[2][64] = {"node0", "node1"};

static rc_pass two_hosts(uint64_t step_ns)
{
    rc_pass p = {.nranks = 2, .nlinks = 4, .links_cap = 4, .host = two_host_names};
    p.links = calloc(4, sizeof *p.links);
    cr_assert_not_null(p.links);
    for (int i = 0; i < 4; i++) {
        rc_link *k = &p.links[i];
        k->src = i % 2, k->dst = (i + 1) % 2, k->channel = (uint8_t)(i / 2);
        k->ns = malloc(STEPS * sizeof *k->ns);
        cr_assert_not_null(k->ns);
        k->n = k->cap = STEPS;
        set_steps(k, 0, STEPS, step_ns);
        k->bytes = STEPS * STEP_BYTES;
        k->busy_ns = STEPS * step_ns;
    }
    return p;
}

/* Rank 0's links (both channels) read steps of ns, their sums too. */
static void read_from_0(rc_pass *p, uint64_t ns)
{
    for (size_t i = 0; i < 4; i += 2) {
        set_steps(&p->links[i], 0, STEPS, ns);
        p->links[i].busy_ns = STEPS * ns;
    }
}

Test(rclinks, a_slow_nic_on_two_hosts_is_slow_against_the_model)
{
    rc_pass p = two_hosts(1680000);
    uint64_t limit, ref = nsc_rc_link_reference(&p, &limit);
    cr_assert_eq(ref, (uint64_t)(2 * STEP_BYTES / RC_NET_FLOOR_GBPS), "the model's step, not the median");
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(p.links[i].state, NSC_LINK_SLOW, "link %zu", i);
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    nsc_rc_check_links(f, "0xa", &p);
    cr_assert_eq(f->n, 1);
    cr_assert_str_eq(f->p[0].kind, "slow_nic");
    cr_assert_str_eq(f->p[0].hosts[0], "node0");
    cr_assert_str_eq(f->p[0].hosts[1], "node1", "either NIC: the steps cannot tell which");
    free(f);
    ring_free(&p);
}

/* A healthy network at the emulator's speed, and one three times as slow
 * as that with a loaded host's pause: not slow. */
Test(rclinks, a_healthy_network_on_two_hosts_is_not_slow)
{
    uint64_t steps[] = {168000, 504000};
    for (size_t c = 0; c < 2; c++) {
        rc_pass p = two_hosts(steps[c]);
        set_steps(&p.links[1], 10, 18, 3000000);
        all_ok(&p);
    }
}

/* Under load one proxy of a fast network (42 us steps, 100 GB/s a rank
 * pair) reads 3.6x slower than before over the job's second half: still
 * faster than the model's healthy network, so not slow since then. */
Test(rclinks, a_link_slower_than_before_but_faster_than_the_model_is_not_slow)
{
    rc_pass p = two_hosts(42000);
    set_steps(&p.links[1], STEPS / 2, STEPS, 150000);
    all_ok(&p);
}

/* Under load the links of one direction read 4x fast: the others, at the
 * emulator's healthy speed, are not slow against them. */
Test(rclinks, links_read_fast_do_not_make_the_model_speed_slow)
{
    rc_pass p = two_hosts(168000);
    read_from_0(&p, 40000);
    all_ok(&p);
}

/* Links read faster than any network (500 GB/s: measured wrong) make no
 * link within the model's step slow, though they are the reference. */
Test(rclinks, links_measured_wrong_make_no_link_within_the_model_slow)
{
    rc_pass p = two_hosts(300000);
    read_from_0(&p, 4000);
    cr_assert_eq(all_ok(&p), 4000);
}

/* The demo's 2-node ring: the links behind a 4x slow one read faster than
 * any network, and the slow one is no more than twice the model's step:
 * slow against the others, which are still the reference. */
Test(rclinks, a_slow_link_is_slow_when_the_others_read_faster_than_any_network)
{
    rc_pass p = two_hosts(4000);
    read_from_0(&p, 620000);
    uint64_t limit, ref = nsc_rc_link_reference(&p, &limit);
    cr_assert_eq(ref, 4000);
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(p.links[i].state, i % 2 ? NSC_LINK_OK : NSC_LINK_SLOW, "link %zu", i);
    ring_free(&p);
}

/* Steps as the proxy pass adds them: in ledger records of RECORD_STEPS,
 * one every 10 ms from 5 s on, on a job's time line whose wall clock is
 * WALL_NS off. */
#define RECORD_STEPS 4
#define WALL_NS 1795000000000000000ll
static uint64_t record_ns(size_t r)
{
    return 5000000000ull + r * 10000000ull;
}

/* Link k's steps again, record by record (nsc_rc_link_add), record r's
 * steps all of its first step's time. */
static void as_records(rc_link *k)
{
    uint64_t ns[STEPS];
    size_t n = k->n;
    cr_assert_eq(n, STEPS);
    memcpy(ns, k->ns, sizeof ns);
    k->n = 0;
    for (size_t s = 0; s < n; s += RECORD_STEPS)
        cr_assert_eq(nsc_rc_link_add(k, ns[s], RECORD_STEPS, record_ns(s / RECORD_STEPS)), 0);
    cr_assert_arr_eq(k->ns, ns, sizeof ns);
}

/* The links' problems, on a time line with a wall clock (the caller frees). */
static nsc_findings *problems_of(rc_pass *p)
{
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    f->has_wall = 1, f->wall_ns = WALL_NS;
    nsc_rc_check_links(f, "0xa", p);
    return f;
}

/* Problem i began when record r did. */
static void began_with(const nsc_findings *f, size_t i, size_t r)
{
    char want[NSC_UTC_MAX];
    nsc_utc_iso((int64_t)record_ns(r) + WALL_NS, want, sizeof want);
    cr_assert_str_eq(f->p[i].began, want, "%s %s", f->p[i].kind, f->p[i].text);
}

/* Ranks 0, 1, 2 on hosts h0, h1, h2. Links 0 -> 1: channel 0 10x slow from
 * step 20 on (record 5, the first step of its fifth run of 8), channel 1 4x
 * slow throughout; 1 -> 2 on channel 1 10x slow from step 20. Each link
 * began at its first slow run's first step; a host pair's problem at its
 * earliest link's. */
static char three_host_names[3][64] = {"h0", "h1", "h2"};

Test(rclinks, a_slow_link_began_at_its_first_slow_runs_first_step)
{
    rc_pass p = ring(20000);
    p.host = three_host_names;
    set_steps(&p.links[0], STEPS / 2, STEPS, 200000);
    set_steps(&p.links[3], 0, STEPS, 80000);
    set_steps(&p.links[4], STEPS / 2, STEPS, 200000);
    for (size_t i = 0; i < NLINKS; i++)
        as_records(&p.links[i]);
    nsc_findings *f = problems_of(&p);
    static const size_t records[NLINKS] = {5, 0, 0, 0, 5, 0};
    for (size_t i = 0; i < NLINKS; i++) {
        int slow = i == 0 || i == 3 || i == 4;
        cr_assert_eq(p.links[i].state, slow ? NSC_LINK_SLOW : NSC_LINK_OK, "link %zu", i);
        cr_assert_eq(p.links[i].began_ns, slow ? record_ns(records[i]) : 0, "link %zu", i);
    }
    cr_assert_eq(f->n, 2);
    cr_assert_str_eq(f->p[0].kind, "slow_link");
    cr_assert_str_eq(f->p[0].hosts[1], "h1");
    began_with(f, 0, 0);
    cr_assert_str_eq(f->p[1].hosts[1], "h2");
    began_with(f, 1, 5);
    free(f);
    ring_free(&p);
}

/* A slow NIC on two hosts (against the model): rank 1's links slow from
 * the first step, rank 0's from step 8 (record 2, in their second run,
 * which is slow: it began at that run's first step, in record 1). The NIC
 * began with the earliest. */
Test(rclinks, a_slow_nic_began_with_its_earliest_slow_link)
{
    rc_pass p = two_hosts(1680000);
    set_steps(&p.links[0], 0, 8, 168000);
    set_steps(&p.links[2], 0, 8, 168000);
    for (size_t i = 0; i < 4; i++)
        as_records(&p.links[i]);
    nsc_findings *f = problems_of(&p);
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(p.links[i].state, NSC_LINK_SLOW, "link %zu", i);
        cr_assert_eq(p.links[i].began_ns, record_ns(i % 2 ? 0 : 1), "link %zu", i);
    }
    cr_assert_eq(f->n, 1);
    cr_assert_str_eq(f->p[0].kind, "slow_nic");
    began_with(f, 0, 0);
    free(f);
    ring_free(&p);
}

/* A link's marks stay RC_LINK_MARKS however many steps it has, and any
 * step's time is that of one at most 2 / RC_LINK_MARKS of its steps before
 * it: here each step its own record, its time its index. */
Test(rclinks, a_links_step_times_are_kept_flat_and_near)
{
    rc_link k = {0};
    for (size_t s = 0; s < 10000; s++) {
        cr_assert_eq(nsc_rc_link_add(&k, 1000, 1, s), 0);
        cr_assert_leq(k.nmarks, RC_LINK_MARKS);
        for (size_t at = 0; at <= s; at += 1 + s / 7) {
            uint64_t t = k.mark_ns[at >> k.mark_shift];
            cr_assert(t <= at && at - t <= 2 * (s + 1) / RC_LINK_MARKS, "step %zu of %zu: %" PRIu64, at, s + 1, t);
        }
    }
    free(k.ns);
}

/* The slow NICs of n communicators (0xa, 0xb, ...) as each one's links
 * analysis leaves them, on pairs[i][0] (or pairs[i][1], if not ""), after
 * nsc_rc_nic_narrow (the caller frees). */
static nsc_findings *narrowed(const char *const (*pairs)[2], size_t n)
{
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    for (size_t i = 0; i < n; i++) {
        char comm[8];
        snprintf(comm, sizeof comm, "0x%c", (char)('a' + i));
        nsc_problem *p = nsc_diag_add(f, NSC_SEV_SLOW_LINK, "slow_nic", comm, 0, -1, "nic %s %s %s", comm,
                                      pairs[i][0], pairs[i][1]);
        cr_assert_not_null(p);
        snprintf(p->hosts[0], sizeof p->hosts[0], "%s", pairs[i][0]);
        snprintf(p->hosts[1], sizeof p->hosts[1], "%s", pairs[i][1]);
    }
    nsc_rc_nic_narrow(f);
    return f;
}

/* A pipeline's p2p communicator spans node0 and node4 only, so its slow NIC
 * is either's; a data-parallel ring through node0..node3 names node0 alone:
 * the either-or problem goes, node0's stands. Two either-or problems of
 * which no host is named alone (a job on two hosts) both stay. */
Test(rclinks, a_nic_placed_alone_elsewhere_narrows_an_either_or_nic)
{
    nsc_findings *f = narrowed((const char *const[][2]){{"node0", "node4"}, {"node0", ""}, {"node1", "node5"}}, 3);
    cr_assert_eq(f->n, 2);
    cr_assert_str_eq(f->p[0].comm, "0xb");
    cr_assert_str_eq(f->p[1].comm, "0xc");
    free(f);
}

/* A job on 3 hosts, node0's NIC slow: each communicator spans two hosts, so
 * each names either (node0 or node1, node0 or node2): node0, in all of
 * them, is named alone, once. Every pair alike (a job on two hosts), or no
 * host in all (two NICs slow), stays as it was. */
Test(rclinks, the_one_host_every_either_or_nic_names_is_the_slow_nic)
{
    nsc_findings *f = narrowed((const char *const[][2]){{"node0", "node1"}, {"node0", "node2"}, {"node0", "node1"}}, 3);
    cr_assert_eq(f->n, 1);
    cr_assert_str_eq(f->p[0].comm, "0xa");
    cr_assert_str_eq(f->p[0].hosts[0], "node0");
    cr_assert_str_eq(f->p[0].hosts[1], "");
    cr_assert(strncmp(f->p[0].text, "slow NIC on node0 (", 19) == 0, "%s", f->p[0].text);
    free(f);
    f = narrowed((const char *const[][2]){{"node0", "node1"}, {"node0", "node1"}}, 2);
    cr_assert_eq(f->n, 2);
    free(f);
    f = narrowed((const char *const[][2]){{"node0", "node1"}, {"node0", "node2"}, {"node1", "node2"}}, 3);
    cr_assert_eq(f->n, 3);
    free(f);
}

/* Link 0's steps vary: its typical step with its first half carried sorted
 * (a root-cause pass's seed, which then sorts only its own half) is the
 * one of all its steps sorted whole, and its steps end sorted alike. */
Test(rclinks, a_carried_sorted_seed_gives_the_typical_step_of_all_steps)
{
    rc_pass whole = ring(20000), seeded = ring(20000);
    uint64_t seed[STEPS / 2], limit;
    for (size_t s = 0; s < STEPS; s++)
        whole.links[0].ns[s] = seeded.links[0].ns[s] = 10000 + (s * 7919) % 40 * 1000;
    nsc_rc_merge_steps(NULL, 0, memcpy(seed, seeded.links[0].ns, sizeof seed), STEPS / 2, seed);
    for (size_t s = 1; s < STEPS / 2; s++)
        cr_assert_leq(seed[s - 1], seed[s], "the seed sorted");
    seeded.links[0].seed = seed, seeded.links[0].nseed = STEPS / 2;
    nsc_rc_link_reference(&whole, &limit);
    nsc_rc_link_reference(&seeded, &limit);
    cr_assert_eq(seeded.links[0].typical, whole.links[0].typical);
    cr_assert_arr_eq(seeded.links[0].ns, whole.links[0].ns, STEPS * sizeof *whole.links[0].ns);
    ring_free(&whole);
    ring_free(&seeded);
}
