/* chread.h: a job read back from ClickHouse into an LMDB store.
 *
 * Owns the read side of the ClickHouse store (docs/clickhouse-read.md, "Queries"):
 * the SELECTs (with FINAL, so a batch inserted twice counts once) through
 * the Distributed tables of a cluster, else from each shard's local tables;
 * each answer in RowBinary in an unlinked file of the given folder
 * (chanswer.h, never held in memory), merged by batch identity (agent,
 * epoch, batch_seq, section: the batches table's row of each section is the
 * anchor, the events, states, completions, contexts and strings tables give
 * its records in their index order) back into the sections the agents sent,
 * which are put into the destination store exactly as the LMDB collector
 * puts them, a chunk of sections per transaction. Memory: one chunk of
 * records (NSC_CHREAD_CHUNK); the answers take disk in the folder meanwhile.
 *
 * Every call makes its own libcurl handle: any thread may read while the
 * writer thread inserts through chstore.h's. Errors are NSC_QUERY_* values
 * (ESTORE: ClickHouse or the destination store failed), with err set.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHREAD_H
#define NCCLSCOPE_COLLECTOR_CHREAD_H

#include <stddef.h>

#include "chstore.h"
#include "query.h"
#include "store.h"

/* Records (events, states, completions) per destination transaction. */
#define NSC_CHREAD_CHUNK (128u * 1024u)

/* How much of a scope's communicator ClickHouse holds among its seqs and
 * ranks (nsc_chread_scope_holds), and so how a scoped load reads it: no
 * record; up to a given number, read alone from ledger_recs; more, read as
 * the ledger batches holding them (a batch's codec bytes are about a fifth
 * of its records' rows). */
typedef enum nsc_chread_holds {
    NSC_CHREAD_NONE,
    NSC_CHREAD_RECORDS,
    NSC_CHREAD_BATCHES
} nsc_chread_holds;

/* Put every stored section of job, its ledger unless ledger is 0, and
 * every host's newest clock model into dst (not in a transaction: this
 * opens and commits its own). tmpdir holds the answers while they are
 * merged. With a scope (a ledger query's: job, communicator, seqs, ranks,
 * time window), only what that query reads: the sections defining contexts or strings
 * (no events, states, completions) and the scope's ledger records (as how
 * says), beside every clock model; a timeline window's scope (events set),
 * those definitions and every section whose records reach into its time
 * window (event_marks), whole, of the processes holding the scope's ranks
 * of its communicator (comm 0: of every process), and no ledger; a
 * definitions scope (defs set, a comms query's), the definitions and clock
 * models alone. The bytes of ClickHouse's answers are added to *read. */
int nsc_chread_job(const nsc_chstore *ch, const char *job, const nsc_query_scope *scope, nsc_chread_holds how,
                   int ledger, const char *tmpdir, nsc_store *dst, uint64_t *read, char *err, size_t errcap);

/* How many ledger records of scope's communicator (by its id) ClickHouse
 * holds among its seqs, ranks and time window, counted up to max + 1:
 * *holds. 0, or an
 * NSC_QUERY_* error with err. */
int nsc_chread_scope_holds(const nsc_chstore *ch, const nsc_query_scope *scope, uint64_t max, const char *tmpdir,
                           nsc_chread_holds *holds, char *err, size_t errcap);

/* The job a query naming none means: the only job ClickHouse holds, into
 * job (cap bytes); "" when it holds none (the query then answers as over an
 * empty store). Several jobs: NSC_QUERY_EPARAM, the query must name one. */
int nsc_chread_only_job(const nsc_chstore *ch, const char *tmpdir, char *job, size_t cap, char *err,
                        size_t errcap);

/* The fingerprint of job in ClickHouse: what its sections (the batches rows:
 * their number and records) and the clock models (each host's newest
 * write) are now, as text into out (cap bytes). The same text means a load
 * now gives the same store. 0, or an NSC_QUERY_* error with err. */
int nsc_chread_print(const nsc_chstore *ch, const char *job, const char *tmpdir, char *out, size_t cap, char *err,
                     size_t errcap);

#endif
