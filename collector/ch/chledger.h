/* chledger.h: the ClickHouse ledger_recs table's record columns, made from
 * common/event_fields.h.
 *
 * Owns the columns between a record's row's process (job, host, pid) and
 * its batch identity: one column per field of NSC_FIELDS_LEDGER in the
 * list's order, then one Array per field of NSC_FIELDS_LEDGER_EDGE, named
 * edge_FIELD (a record's edges, element i of each Array being edge i). A string field
 * (func, datatype, algo, proto) is the process's string id, as on the
 * wire: its text is the `strings` row of the same job, host, pid and id.
 * Why a row per record: SQL can then pick a communicator's seqs, ranks and
 * times where the data lies (the `ledger` table keeps a batch as one blob
 * of the ledger codec). A field added to event_fields.h is a column here
 * with no edit. chrows.c writes the rest of the rows.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHLEDGER_H
#define NCCLSCOPE_COLLECTOR_CHLEDGER_H

#include "chcols.h"
#include "ledger.h"

/* The ledger_recs table's columns in order: NSC_CH_PROC_COLUMNS, these
 * ("comm_id UInt64, seq UInt64, rank Int32, ..., edge_peer Array(Int32), ..."),
 * NSC_CH_ORIGIN_COLUMNS. */
const char *nsc_ch_ledger_columns(void);

/* The names of those columns, ", "-separated, as a SELECT lists them. */
const char *nsc_ch_ledger_names(void);

/* r's values of the columns after the process, before the batch identity,
 * put into the row of t. */
void nsc_ch_ledger_values(nsc_ch_cols *t, const nsc_ledger_rec *r);

/* A record from those columns' values in RowBinary at p (len bytes), its
 * edges into edges[cap] (r->edges; NULL, with r->nedges still the count,
 * where there are more than cap). The bytes read, or 0 when the values
 * are cut short or the edge Arrays disagree in length. */
size_t nsc_ch_ledger_read(const uint8_t *p, size_t len, nsc_ledger_rec *r, nsc_ledger_edge *edges, size_t cap);

/* colls.c's rule for a collective that can hold a rank's previous kernel
 * end (GPU times, every channel's kernel ended), once over a record and
 * once as SQL over a ledger_recs row (with NSC_CH_LEDGER_ENDED_FLAGS for
 * its %u): the marks (chrows.h) and the window's reads (chread.c) must
 * agree on it. */
int nsc_ch_ledger_ended(const nsc_ledger_rec *r);
#define NSC_CH_LEDGER_ENDED_SQL "bitAnd(flags, %u) = 0 AND gpu_start_ns != 0 AND nchannels_done >= nchannels"
#define NSC_CH_LEDGER_ENDED_FLAGS ((unsigned)(NSC_LEDGER_P2P | NSC_LEDGER_NO_GPU))

#endif
