/* chretain.c: old jobs deleted from ClickHouse (see chretain.h). */
#include "chretain.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chanswer.h"
#include "chrows.h"
#include "chstore.h"
#include "logsafe.h"

#define REQUEST_MAX_S 60
#define PERIOD_MAX_MS 600000ull  /* a pass at least every 10 minutes */
#define LITERAL_MAX 140           /* a job name (63 bytes) quoted and escaped */
#define SQL_MAX (NSC_CHRETAIN_JOBS_MAX * (LITERAL_MAX + 1) + 512)

uint64_t nsc_chretain_period_ns(const nsc_collector *c)
{
    uint64_t ms = c->cfg.retain_age_s * 500;  /* half the age */
    if (ms == 0)
        return 0;
    if (ms > PERIOD_MAX_MS)
        ms = PERIOD_MAX_MS;
    if (ms < c->cfg.live_interval_ms)
        ms = c->cfg.live_interval_ms;
    return ms * 1000000ull;
}

/* POST sql to server; its answer (malloc'd, *len bytes) into *ans when ans
 * is not NULL. 0, or -1 with err. */
static int run_sql(const nsc_chstore *ch, const char *server, const char *sql, char **ans, size_t *len, char *err,
                   size_t errcap)
{
    char *text;
    size_t n;
    int rc = nsc_chanswer_post_text(nsc_chstore_conn(ch), server, sql, strlen(sql), REQUEST_MAX_S, "retention",
                                  &text, &n, err, errcap);
    if (!rc && ans)
        *ans = text, *len = n;
    else
        free(text);
    return rc ? -1 : 0;
}

/* Append the jobs of a RowBinary answer (a String a row) to list as SQL
 * literals. */
static void take_jobs(const char *ans, size_t len, char *list, size_t cap, int *n)
{
    const uint8_t *p = (const uint8_t *)ans, *end = p + len, *s;
    size_t sl;
    while (*n < NSC_CHRETAIN_JOBS_MAX && (s = nsc_ch_take_string(&p, end, &sl))) {
        char job[64], lit[LITERAL_MAX];
        size_t used = strlen(list);
        if (sl >= sizeof job)
            continue;
        memcpy(job, s, sl);
        job[sl] = 0;
        if (job[0] && nsc_chanswer_literal(job, lit, sizeof lit) == 0 && !strstr(list, lit) &&
            used + strlen(lit) + 2 < cap)
            snprintf(list + used, cap - used, "%s%s", *n ? "," : "", lit), (*n)++;
    }
}

/* The jobs no insert touched since cutoff (wall clock, ns), from every
 * source, into list; their number, or -1 with err. */
static int old_jobs(const nsc_chstore *ch, uint64_t cutoff, char *list, size_t cap, char *err, size_t errcap)
{
    const char *servers[NSC_CHSTORE_SHARDS_MAX], *suffix, *db;
    size_t ns = nsc_chstore_sources(ch, servers, NSC_CHSTORE_SHARDS_MAX, &suffix, &db);
    int n = 0;
    list[0] = 0;
    for (size_t i = 0; i < ns; i++) {
        char sql[512], *ans;
        size_t len;
        /* RowBinary: a job name may hold any byte */
        snprintf(sql, sizeof sql,
                 "SELECT job FROM %s.%s%s GROUP BY job HAVING max(wall_ns) < %" PRIu64 " LIMIT %d FORMAT RowBinary",
                 db, nsc_ch_def(NSC_CH_JOBS).name, suffix, cutoff, NSC_CHRETAIN_JOBS_MAX);
        if (run_sql(ch, servers[i], sql, &ans, &len, err, errcap))
            return -1;
        take_jobs(ans, len, list, cap, &n);
        free(ans);
    }
    return n;
}

/* ALTER TABLE ... DELETE of the listed jobs in every table with a job
 * column on every shard. */
static int delete_jobs(const nsc_chstore *ch, const char *list, char *err, size_t errcap)
{
    const char *servers[NSC_CHSTORE_SHARDS_MAX], *db;
    size_t ns = nsc_chstore_shards(ch, servers, NSC_CHSTORE_SHARDS_MAX, &db);
    char *sql = malloc(SQL_MAX);
    int rc = sql ? 0 : -1;
    for (size_t i = 0; !rc && i < ns; i++)
        for (int t = 0; !rc && t < NSC_CH_NTABLES; t++) {
            nsc_ch_table_def d = nsc_ch_def(t);
            if (strncmp(d.columns, "job String", 10) != 0)
                continue;
            snprintf(sql, SQL_MAX, "ALTER TABLE %s.%s_local DELETE WHERE job IN (%s)", db, d.name, list);
            rc = run_sql(ch, servers[i], sql, NULL, NULL, err, errcap);
        }
    if (!sql)
        snprintf(err, errcap, "out of memory");
    free(sql);
    return rc;
}

int nsc_chretain_pass(nsc_chback *b, uint64_t now_ns, char *err, size_t errcap)
{
    const nsc_collector *c = b->c;
    uint64_t age_ns = c->cfg.retain_age_s * 1000000000ull;
    char *list = malloc(SQL_MAX);
    if (!list) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    int n = now_ns > age_ns ? old_jobs(b->ch, now_ns - age_ns, list, SQL_MAX, err, errcap) : 0;
    if (n > 0 && delete_jobs(b->ch, list, err, errcap))
        n = -1;
    if (n > 0) {
        atomic_fetch_add_explicit(&b->c->stats.retained_jobs, (uint64_t)n, memory_order_relaxed);
        char jobs[300];
        fprintf(stderr, "ncclscope-collector: retention: %d job(s) not written for %" PRIu64 " s deleted: %s\n",
                n, c->cfg.retain_age_s, nsc_logsafe(jobs, sizeof jobs, list));
    }
    free(list);
    return n;
}
