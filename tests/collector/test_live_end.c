/* test_live_end.c: a job that ends, ends (engine/live): once none of its
 * processes is alive, its lag and hang stop growing, its gauges and counts
 * return to 0, and its verdict names where it stopped with what is known of
 * each stuck rank's process; the verdict survives a rebuild from the store
 * and a snapshot. Also the one wording of a process's life every view reads. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "live.h"
#include "livefeed.h"
#include "storeutil.h"

#define S 1000000000ull
#define T0 (100 * S)
/* The wall clock that puts collector time T0 + 21 s at 12:04:31 UTC. */
#define WALL ((int64_t)(12 * 3600 + 4 * 60 + 31 - 121) * (int64_t)S)

static const nsc_live_cfg cfg = {.heartbeat_timeout_ns = 30 * S, .lag_ns = 10 * S};

static nsc_test_feed feed(int rank)
{
    return (nsc_test_feed){.agent = "agent1", .job = "job1", .host = "h1", .func = "AllReduce",
                           .pid = 100 + (uint32_t)rank, .rank = rank, .nranks = 4, .comm = 0xabc};
}

/* Rank r's Colls [0, last], the last one left open when open_last, at T0 + 1 s. */
static void colls(nsc_live *l, int rank, uint64_t last, int open_last)
{
    nsc_test_feed f = feed(rank);
    cr_assert_eq(nsc_test_feed_colls(l, &f, 0, last, open_last, T0 + S), 0);
}

static void life(nsc_live *l, int rank, uint8_t event, uint64_t at)
{
    nsc_a2c_life life = {.event = event, .reason = event == NSC_A2C_DIED ? NSC_A2C_REASON_EXITED : 0,
                         .pid = 100 + (uint32_t)rank, .job = "job1"};
    cr_assert_eq(nsc_live_life(l, "agent1", "h1", &life, at), 0);
}

/* Ranks 0-2 inside AllReduce seq 5, rank 3 never arrives (done with 4);
 * every process finishes at T0 + 20 s, rank 3's last, at T0 + 21 s. */
static nsc_live *rank3_never_arrives(void)
{
    nsc_live *l = nsc_live_new(&cfg);
    cr_assert_not_null(l);
    nsc_live_set_wall(l, WALL);
    for (int r = 0; r < 3; r++)
        colls(l, r, 5, 1);
    colls(l, 3, 4, 0);
    return l;
}

static void finish_all(nsc_live *l)
{
    for (int r = 0; r < 4; r++)
        life(l, r, NSC_A2C_FINISHED, T0 + (r == 3 ? 21 : 20) * S);
}

static nsc_json_doc status_doc(const nsc_live *l, uint64_t now)
{
    nsc_json_doc doc;
    const char *why;
    cr_assert_eq(nsc_test_live_status_doc(l, now, &doc, &why), 0, "%s", why);
    return doc;
}

static const nsc_json *job_of(const nsc_json_doc *d)
{
    return nsc_json_at(nsc_json_get(nsc_json_root(d), "jobs"), 0);
}

static const nsc_json *comm_of(const nsc_json_doc *d)
{
    return nsc_json_at(nsc_json_get(job_of(d), "comms"), 0);
}

static const nsc_json *rank_of(const nsc_json_doc *d, int k)
{
    return nsc_json_at(nsc_json_get(comm_of(d), "ranks"), (size_t)k);
}

static const char *text_at(const nsc_json *o, const char *key)
{
    const char *s = nsc_json_str(nsc_json_get(o, key));
    return s ? s : "(none)";
}

/* The job's verdict and rank 3's frozen for_ns, at now. */
static void read_end(const nsc_live *l, uint64_t now, char *verdict, size_t cap, uint64_t *rank3_for)
{
    nsc_json_doc d = status_doc(l, now);
    cr_assert_str_eq(text_at(job_of(&d), "state"), "ended");
    snprintf(verdict, cap, "%s", text_at(job_of(&d), "verdict"));
    cr_assert_eq(nsc_json_get(comm_of(&d), "lagging")->count, 0, "an ended job's ranks are not lagging");
    cr_assert_eq(nsc_json_get(comm_of(&d), "hangs")->count, 0, "an ended job's ranks are not hung");
    cr_assert_eq(nsc_json_u64(nsc_json_get(nsc_json_at(nsc_json_get(rank_of(&d, 3), "collectives"), 0), "for_ns"),
                              rank3_for), 0);
    nsc_json_free(&d);
}

static void comm_stat(const nsc_live *l, uint64_t now, nsc_live_comm_stat *out)
{
    nsc_live_comm_stat *s;
    size_t n, omitted;
    cr_assert_eq(nsc_live_comm_stats(l, now, 8, &s, &n, &omitted), 0);
    cr_assert_eq(n, 1);
    *out = s[0];
    free(s);
}

/* The live summary at now holds text. */
static int summary_has(const nsc_live *l, uint64_t now, const char *text)
{
    char *doc = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&doc, &len);
    cr_assert_not_null(f);
    int rc = nsc_live_summary_json(l, now, f);
    cr_assert_eq(fclose(f) || rc, 0);
    int has = strstr(doc, text) != NULL;
    cr_assert(has, "%s", doc);
    free(doc);
    return has;
}

#define RANK3_VERDICT "ended hung at AllReduce seq 5: rank 3 never arrived (process alive until 12:04:31 UTC)"

Test(live_end, lag_stops_gauges_return_to_zero_verdict_stays)
{
    nsc_live *l = rank3_never_arrives();
    nsc_live_counts c;
    nsc_live_comm_stat st;
    nsc_live_counts_get(l, T0 + 15 * S, &c);
    cr_assert_eq(c.lagging, 1, "running: rank 3 lags");
    cr_assert_eq(c.jobs_ended, 0);
    comm_stat(l, T0 + 15 * S, &st);
    cr_assert_float_eq(st.lag_s, 14.0, 1e-9);
    cr_assert_eq(st.lag_rank, 3);

    finish_all(l);
    char first[640], later[640];
    uint64_t for1, for2;
    read_end(l, T0 + 30 * S, first, sizeof first, &for1);
    read_end(l, T0 + 300 * S, later, sizeof later, &for2);
    cr_assert_str_eq(first, RANK3_VERDICT);
    cr_assert_str_eq(later, first);
    cr_assert_eq(for1, 20 * S, "rank 3 waited from T0 + 1 s to its job's end, T0 + 21 s");
    cr_assert_eq(for2, for1, "an ended job's lag does not grow");
    for (uint64_t t = 30; t <= 300; t += 270) {
        nsc_live_counts_get(l, T0 + t * S, &c);
        cr_assert_eq(c.lagging + c.hangs, 0, "an ended job counts no lagging or hung rank");
        cr_assert_eq(c.jobs_ended, 1);
        cr_assert(summary_has(l, T0 + t * S, "\"hangs\":0,\"hung_collectives\":0,\"lagging\":0,\"jobs_ended\":1,"));
        comm_stat(l, T0 + t * S, &st);
        cr_assert_eq(st.lag_s, 0.0, "the lag gauge returns to 0");
        cr_assert_eq(st.lag_rank, -1);
        cr_assert_eq(st.lagging + st.hung + st.in_flight, 0);
        cr_assert_eq(st.in_flight_max_s, 0.0);
    }
    nsc_live_free(l);
}

/* One process still alive keeps the job running: judged at now. */
Test(live_end, one_process_alive_keeps_it_running)
{
    nsc_live *l = rank3_never_arrives();
    for (int r = 0; r < 3; r++)
        life(l, r, NSC_A2C_FINISHED, T0 + 20 * S);
    nsc_json_doc d = status_doc(l, T0 + 25 * S);
    cr_assert_str_eq(text_at(job_of(&d), "state"), "running");
    cr_assert_eq(nsc_json_get(job_of(&d), "verdict")->kind, NSC_JSON_NULL);
    cr_assert_eq(nsc_json_get(comm_of(&d), "lagging")->count, 1);
    nsc_json_free(&d);
    nsc_live_free(l);
}

/* Every rank arrived, ranks 0 and 1 completed seq 5, ranks 2 and 3 did not:
 * hung. Rank 2's process was killed (the agent saw it exit), rank 3's went
 * silent without a death record: each said as it is known. */
static nsc_live *two_hung(void)
{
    nsc_live *l = nsc_live_new(&cfg);
    cr_assert_not_null(l);
    nsc_live_set_wall(l, WALL);
    for (int r = 0; r < 4; r++)
        colls(l, r, 5, r >= 2);
    life(l, 0, NSC_A2C_FINISHED, T0 + 20 * S);
    life(l, 1, NSC_A2C_FINISHED, T0 + 20 * S);
    life(l, 2, NSC_A2C_DIED, T0 + 21 * S);
    return l;
}

#define TWO_HUNG_VERDICT                                                                                   \
    "ended hung at AllReduce seq 5: rank 2 never completed it (process dead since 12:04:31 UTC (exited)); " \
    "rank 3 never completed it (process silent since 12:04:11 UTC)"

Test(live_end, hung_ranks_with_what_is_known_of_their_processes)
{
    nsc_live *l = two_hung();
    nsc_json_doc d = status_doc(l, T0 + 15 * S);
    cr_assert_str_eq(text_at(rank_of(&d, 3), "process"), "alive");
    cr_assert_eq(nsc_json_get(comm_of(&d), "hangs")->count, 2);
    nsc_json_free(&d);
    d = status_doc(l, T0 + 40 * S);  /* rank 3 silent past the heartbeat timeout: the job ended */
    cr_assert_str_eq(text_at(job_of(&d), "state"), "ended");
    cr_assert_str_eq(text_at(job_of(&d), "verdict"), TWO_HUNG_VERDICT);
    cr_assert_str_eq(text_at(job_of(&d), "verdict_comm"), "0xabc");
    cr_assert_str_eq(text_at(rank_of(&d, 0), "process"), "alive until 12:04:30 UTC");
    cr_assert_str_eq(text_at(rank_of(&d, 2), "state"), "dead");
    nsc_json_free(&d);
    nsc_live_free(l);
}

Test(live_end, every_collective_completed)
{
    nsc_live *l = nsc_live_new(&cfg);
    cr_assert_not_null(l);
    for (int r = 0; r < 4; r++)
        colls(l, r, 5, 0);
    finish_all(l);
    char v[640];
    uint64_t for3;
    read_end(l, T0 + 30 * S, v, sizeof v, &for3);
    cr_assert_str_eq(v, "ended: every collective completed");
    nsc_live_free(l);
}

static int put_prog(void *arg, const nsc_store_progress *p)
{
    return nsc_store_put_progress(arg, p);
}

/* The state into a fresh store as the collector keeps it: each rank's
 * definition, progress and lifecycle records (lives: rank, event, time). */
static nsc_store *stored(nsc_live *l, char **dir, const uint8_t (*lives)[2], const uint64_t *at, size_t nlives)
{
    nsc_store *st = nsc_tmp_store_open(dir);
    cr_assert_not_null(st);
    cr_assert_eq(nsc_store_begin(st, T0), 0);
    for (int r = 0; r < 4; r++) {
        nsc_proc proc = nsc_test_proc("job1", "h1", 100 + (uint32_t)r, r);
        nsc_ctx_def ctx = nsc_test_ctx(0, 0xabc, r, 4);
        nsc_store_batch sb = {.proc = &proc, .ctxs = &ctx, .nctxs = 1};
        cr_assert_eq(nsc_store_put(st, &sb), 0);
    }
    cr_assert_eq(nsc_live_take_progress(l, put_prog, st), 0);
    for (size_t i = 0; i < nlives; i++) {
        nsc_store_life sl = {.host = "h1", .job = "job1", .agent = "agent1", .pid = 100u + lives[i][0],
                             .event = lives[i][1], .ref_ns = at[i],
                             .reason = lives[i][1] == NSC_A2C_DIED ? NSC_A2C_REASON_EXITED : 0};
        cr_assert_eq(nsc_store_put_life(st, &sl), 0);
    }
    cr_assert_eq(nsc_store_commit(st), 0);
    return st;
}

static nsc_live *rebuilt(nsc_store *st, uint64_t now)
{
    nsc_store_reader *rd;
    nsc_live *back;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_live_from_store(rd, &cfg, now, &back), 0);
    nsc_store_read_end(rd);
    nsc_live_set_wall(back, WALL);  /* the store's is the test machine's */
    return back;
}

/* A restarted collector reads the same verdict: which collectives were in
 * flight is kept with each rank's progress. */
Test(live_end, verdict_survives_a_rebuild_from_the_store)
{
    nsc_live *l = two_hung();
    const uint8_t lives[3][2] = {{0, NSC_A2C_FINISHED}, {1, NSC_A2C_FINISHED}, {2, NSC_A2C_DIED}};
    const uint64_t at[3] = {T0 + 20 * S, T0 + 20 * S, T0 + 21 * S};
    char *dir;
    nsc_store *st = stored(l, &dir, lives, at, 3);
    nsc_live *back = rebuilt(st, T0 + 300 * S);
    nsc_json_doc d = status_doc(back, T0 + 300 * S);
    cr_assert_str_eq(text_at(job_of(&d), "verdict"), TWO_HUNG_VERDICT);
    nsc_json_free(&d);
    nsc_live_free(back);
    nsc_live_free(l);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* In a job still running at the restart, a stored in-flight collective
 * counts as done: its completion may come unmatched after it. */
Test(live_end, running_job_rebuilt_has_nothing_in_flight)
{
    nsc_live *l = two_hung();
    char *dir;
    nsc_store *st = stored(l, &dir, NULL, NULL, 0);
    nsc_live *back = rebuilt(st, T0 + 2 * S);
    nsc_live_counts c;
    nsc_live_counts_get(back, T0 + 2 * S, &c);
    cr_assert_eq(c.jobs_ended, 0);
    nsc_live_comm_stat s;
    comm_stat(back, T0 + 2 * S, &s);
    cr_assert_eq(s.in_flight, 0);
    nsc_live_free(back);
    nsc_live_free(l);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

Test(live_end, verdict_survives_a_snapshot)
{
    nsc_live *l = rank3_never_arrives();
    finish_all(l);
    uint8_t *snap;
    size_t len;
    const char *why;
    nsc_live *back;
    uint64_t now = T0 + 30 * S, wall = (uint64_t)((int64_t)now + WALL);
    cr_assert_eq(nsc_live_snapshot(l, now, wall, &snap, &len), 0);
    cr_assert_eq(nsc_live_from_snapshot(snap, len, &cfg, now, wall, &back, &why), 0, "%s", why);
    nsc_live_set_wall(back, WALL);  /* a reader's own: a merge takes the collector's */
    char v[640];
    uint64_t for3;
    read_end(back, now + 60 * S, v, sizeof v, &for3);
    cr_assert_str_eq(v, RANK3_VERDICT);
    cr_assert_eq(for3, 20 * S);
    free(snap);
    nsc_live_free(back);
    nsc_live_free(l);
}

typedef struct seen_prog {
    int n;
    uint8_t done;
} seen_prog;

static int take_prog(void *arg, const nsc_store_progress *p)
{
    seen_prog *s = arg;
    s->n++;
    s->done = p->done;
    return 0;
}

/* Progress records as the store reads them back: the done flag of this
 * version, an older store's 16-byte record (done), a flag out of range and
 * a record cut short (corrupt). */
Test(live_end, progress_record_decoding)
{
    static const uint8_t key[] = "prog/j\0\0\0\0\0\0\0\0\x01\x80\0\0\0AllReduce";
    uint8_t val[17] = {0};
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    nsc_store_close(st);
    const struct {
        size_t len;
        uint8_t flag;
        int rc, done;
    } cases[] = {{17, 0, 0, 0}, {17, 1, 0, 1}, {16, 0, 0, 1}, {17, 2, NSC_STORE_ECORRUPT, 0},
                 {15, 0, NSC_STORE_ECORRUPT, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        val[16] = cases[i].flag;
        cr_assert_eq(nsc_raw_put(dir, "meta", key, sizeof key - 1, val, cases[i].len, 0), 0);
        cr_assert_eq(nsc_store_open(dir, NULL, &st), 0);
        nsc_store_reader *rd;
        seen_prog seen = {0};
        cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
        cr_assert_eq(nsc_store_progresses(rd, take_prog, &seen), cases[i].rc, "case %zu", i);
        nsc_store_read_end(rd);
        nsc_store_close(st);
        if (!cases[i].rc)
            cr_assert_eq(seen.done, cases[i].done, "case %zu", i);
    }
    nsc_tmp_store_remove(dir);
}
