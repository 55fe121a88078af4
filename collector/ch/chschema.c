/* chschema.c: the ClickHouse store's tables (see chschema.h). */
#include "chschema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chanswer.h"
#include "chrows.h"

#define SQL_MAX 4096
#define REQUEST_MAX_S 120  /* as long as an insert may take */

/* text on server; its answer (malloc'd) into *ans when ans is given. 0, or
 * -1 after printing why. */
static int sql(const nsc_chconn *conn, const char *server, const char *text, char **ans)
{
    char err[512], *out = NULL;
    size_t len;
    if (nsc_chanswer_post_text(conn, server, text, strlen(text), REQUEST_MAX_S, text, &out, &len, err, sizeof err)) {
        fprintf(stderr, "ncclscope-collector: %s\n", err);
        return -1;
    }
    if (ans)
        *ans = out;
    else
        free(out);
    return 0;
}

static int create_database(const nsc_chconn *conn, const char *server, const char *db)
{
    char q[128];
    snprintf(q, sizeof q, "CREATE DATABASE IF NOT EXISTS %s", db);
    return sql(conn, server, q, NULL);
}

/* The columns of table (NAME_local) on server as ClickHouse lists them,
 * "name Type, ..." (definition order), into out; 0 or -1. */
static int local_columns(const nsc_chconn *conn, const char *server, const char *db, const char *table, char *out,
                         size_t cap)
{
    char q[256], *ans;
    snprintf(q, sizeof q,
             "SELECT name, type FROM system.columns WHERE database = '%s' AND table = '%s_local' FORMAT TabSeparated",
             db, table);
    if (sql(conn, server, q, &ans))
        return -1;
    size_t n = 0;
    for (const char *c = ans; *c && n + 3 < cap; c++) {
        if (*c == '\n' && c[1])
            out[n++] = ',', out[n++] = ' ';
        else if (*c != '\n')
            out[n++] = *c == '\t' ? ' ' : *c;
    }
    out[n] = 0;
    free(ans);
    return 0;
}

/* A table made by a collector of another layout (CREATE ... IF NOT EXISTS
 * keeps it) would refuse every insert: say so at start instead. */
static int same_layout(const nsc_chconn *conn, const char *server, const char *db, const nsc_ch_table_def *d)
{
    char have[SQL_MAX];
    if (local_columns(conn, server, db, d->name, have, sizeof have))
        return -1;
    if (strcmp(have, d->columns) == 0)
        return 0;
    fprintf(stderr,
            "ncclscope-collector: clickhouse: %s.%s_local on %s has the columns of another ncclscope version "
            "(%.300s), not (%.300s): drop the database or give the collector a new one\n",
            db, d->name, server, have, d->columns);
    return -1;
}

/* A table made before its granules were set (chrows.c) keeps ClickHouse's
 * 8,192 rows (18.16 cannot change them): its answers are the same, but a
 * timeline window reads rows in proportion to its job. Said at start. */
static int check_granule(const nsc_chconn *conn, const char *server, const char *db, const nsc_ch_table_def *d)
{
    char q[384], want[64], *ans;
    if (!d->granule)
        return 0;
    snprintf(want, sizeof want, "index_granularity = %u", d->granule);
    /* a yes or no, not the text: releases spell engine_full apart */
    snprintf(q, sizeof q,
             "SELECT position(engine_full, '%s') > 0 FROM system.tables WHERE database = '%s' AND name = '%s_local' "
             "FORMAT TabSeparated",
             want, db, d->name);
    if (sql(conn, server, q, &ans))
        return -1;
    if (ans[0] != '1')
        fprintf(stderr,
                "ncclscope-collector: clickhouse: %s.%s_local on %s was made without %s (an older ncclscope): "
                "its answers are the same, but a timeline window reads more of it the longer its job; a new "
                "database gets the finer granules\n",
                db, d->name, server, want);
    free(ans);
    return 0;
}

/* A table of records made by a collector that wrote no marks for it
 * (ledger_recs without ledger_marks: the seqs of a time window; events
 * without event_marks: its sections): a time window, found by the marks,
 * would miss its records. */
static int has_marks(const nsc_chconn *conn, const char *server, const char *db, nsc_ch_table recs_t,
                     nsc_ch_table marks_t, const char *what)
{
    char q[512], *ans;
    const char *recs = nsc_ch_def(recs_t).name, *marks = nsc_ch_def(marks_t).name;
    snprintf(q, sizeof q,
             "SELECT countIf(name = '%s_local') > countIf(name = '%s_local') FROM system.tables "
             "WHERE database = '%s' FORMAT TabSeparated",
             recs, marks, db);
    if (sql(conn, server, q, &ans))
        return -1;
    int old = ans[0] == '1';
    free(ans);
    if (old)
        fprintf(stderr,
                "ncclscope-collector: clickhouse: %s.%s_local on %s was made by an ncclscope version without "
                "%s (%s): drop the database or give the collector a new one\n",
                db, recs, server, marks, what);
    return old ? -1 : 0;
}

static int every_marks(const nsc_chconn *conn, const char *server, const char *db)
{
    return has_marks(conn, server, db, NSC_CH_LEDGER_RECS, NSC_CH_LEDGER_MARKS, "its records' seqs by time") ||
           has_marks(conn, server, db, NSC_CH_EVENTS, NSC_CH_EVENT_MARKS, "its sections by time");
}

/* The database db on server and its tables: the local ones (cluster NULL),
 * each checked against this version's layout, or the Distributed ones over
 * cluster's shards. */
static int create(const nsc_chconn *conn, const char *server, const char *db, const char *cluster)
{
    char q[SQL_MAX], settings[64];
    if (create_database(conn, server, db) || (!cluster && every_marks(conn, server, db)))
        return -1;
    for (int t = 0; t < NSC_CH_NTABLES; t++) {
        const nsc_ch_table_def d = nsc_ch_def(t);
        settings[0] = 0;
        if (d.granule)
            snprintf(settings, sizeof settings, " SETTINGS index_granularity = %u", d.granule);
        int n = cluster ? snprintf(q, sizeof q,
                                   "CREATE TABLE IF NOT EXISTS %s.%s (%s) ENGINE = Distributed(%s, %s, %s_local, %s)",
                                   db, d.name, d.columns, cluster, db, d.name, d.shard_by)
                        : snprintf(q, sizeof q,
                                   "CREATE TABLE IF NOT EXISTS %s.%s_local (%s) ENGINE = ReplacingMergeTree(%s)%s%s "
                                   "ORDER BY (%s)%s",
                                   db, d.name, d.columns, d.version, d.partition[0] ? " PARTITION BY " : "",
                                   d.partition, d.order_by, settings);
        if (n >= (int)sizeof q || sql(conn, server, q, NULL) ||
            (!cluster && (same_layout(conn, server, db, &d) || check_granule(conn, server, db, &d))))
            return -1;
    }
    return 0;
}

int nsc_chschema_local(const nsc_chconn *conn, const char *server, const char *db)
{
    return create(conn, server, db, NULL);
}

int nsc_chschema_distributed(const nsc_chconn *conn, const char *server, const char *db, const char *cluster)
{
    return create(conn, server, db, cluster);
}
