/* chschema.h: the ClickHouse store's tables, made at start.
 *
 * Owns the DDL of the store (docs/clickhouse.md): the database, and on a
 * server the local tables of chrows.h's layout (DB.T_local,
 * ReplacingMergeTree, CREATE ... IF NOT EXISTS); a local table another
 * version made with other columns would refuse every insert, so its columns
 * are checked against this version's and a mismatch fails the start with
 * the reason; with a cluster, the Distributed tables (DB.T) over the shards'
 * local ones. Each request on its own handle (chanswer.h), once per start:
 * chstore.h's kept-alive handles are for the rows. Failures are printed to
 * stderr with the reason.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHSCHEMA_H
#define NCCLSCOPE_COLLECTOR_CHSCHEMA_H

#include "chconn.h"

/* The database db and its local tables on server (http://HOST:PORT/),
 * reached as conn says. 0, or -1 after printing why. */
int nsc_chschema_local(const nsc_chconn *conn, const char *server, const char *db);

/* The database db and its Distributed tables over cluster on server. 0, or
 * -1 after printing why. */
int nsc_chschema_distributed(const nsc_chconn *conn, const char *server, const char *db, const char *cluster);

#endif
