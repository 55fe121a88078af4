/* chrows.h: the ClickHouse tables' columns and their rows.
 *
 * Owns the one definition of every ClickHouse table the collector writes
 * (name, columns with types, ordering key, partition, sharding key, engine
 * version column, granules) and the values of one record's row, put into the
 * table's columns (chcols.h) in exactly the order of that definition. The events table's
 * columns for the event's fields are made from common/event_fields.h
 * (chevents.c). chstore.c builds the DDL from nsc_ch_def and posts the
 * rows (chnative.h makes their blocks); nothing here does I/O.
 *
 * Every row carries a deterministic identity taken from the batch that
 * brought it (agent, epoch, batch_seq, section, index), the last columns of
 * its ordering key: a batch inserted twice (the agent sent it again after a
 * lost acknowledgement or a collector restart) gives identical keys, which
 * ReplacingMergeTree folds into one row (at once for reads with FINAL).
 * The states and completions of a section are one row, each field an
 * Array of the section's records in order: a state row per event (2.5 in
 * the benchmark's feed) cost the servers more than the event's own row.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHROWS_H
#define NCCLSCOPE_COLLECTOR_CHROWS_H

#include <stddef.h>
#include <stdint.h>

#include "chcols.h"
#include "chorigin.h"
#include "clock.h"
#include "ledger.h"
#include "store.h"

typedef enum nsc_ch_table {
    NSC_CH_EVENTS,
    NSC_CH_STATES,
    NSC_CH_COMPLETIONS,
    NSC_CH_CONTEXTS,
    NSC_CH_STRINGS,
    NSC_CH_EVENT_MARKS,
    NSC_CH_LIFECYCLE,
    NSC_CH_BATCHES,
    NSC_CH_CLOCKS,
    NSC_CH_PROGRESS,
    NSC_CH_LIVE,
    NSC_CH_JOBS,
    NSC_CH_LEDGER,
    NSC_CH_LEDGER_RECS,
    NSC_CH_LEDGER_MARKS,
    NSC_CH_WALL,
    NSC_CH_NTABLES
} nsc_ch_table;

typedef struct nsc_ch_table_def {
    const char *name;       /* local table: NAME_local; the cluster's: NAME */
    const char *columns;    /* "name Type, ..." in the rows' order */
    const char *order_by;
    const char *partition;  /* "" for none */
    const char *shard_by;   /* Distributed sharding expression */
    const char *version;    /* ReplacingMergeTree version column, "" for none */
    unsigned granule;       /* rows per index mark (index_granularity); 0: ClickHouse's default */
} nsc_ch_table_def;

/* A ledger mark's seqs: those of one bucket, seq >> NSC_CH_MARK_BITS. */
#define NSC_CH_MARK_BITS 10

/* An event mark's times: those of one bucket, ns >> NSC_CH_TIME_BITS (about
 * 1.07 s). A section whose records span more than NSC_CH_TIME_SPAN buckets
 * has one mark, in bucket NSC_CH_TIME_WIDE, which every time window reads. */
#define NSC_CH_TIME_BITS 30
#define NSC_CH_TIME_SPAN 64
#define NSC_CH_TIME_WIDE UINT64_MAX
/* A mark's P2p contexts listed one by one: a process seldom has more. */
#define NSC_CH_P2P_CTXS_MAX 32

/* Table t's definition. */
nsc_ch_table_def nsc_ch_def(nsc_ch_table t);

/* A 64-bit field of a section's records (states, completions) as three
 * columns, 4 bytes a record where the section's values lie within 2^32 of
 * each other (times, a state's arg; not event ids, whose high half is the
 * plugin's slot): NAME_base, the smallest value; NAME_off, each
 * value's distance from it; NAME_wide, the values whole, only where some
 * distance does not fit (NAME_off then empty). Read back a value a row
 * (ARRAY JOIN) as NSC_CH_VALUE(NAME, AS) with NSC_CH_ARRAY(NAME) AS AS
 * among the ARRAY JOIN's arrays (18.16 refuses a column of the row inside
 * an ARRAY JOIN's lambda, so the base is added after). */
#define NSC_CH_NARROW(name) name "_base UInt64, " name "_off Array(UInt32), " name "_wide Array(UInt64)"
#define NSC_CH_ARRAY(name) "if(empty(" name "_wide), CAST(" name "_off AS Array(UInt64)), " name "_wide)"
#define NSC_CH_VALUE(name, as) as " + if(empty(" name "_wide), " name "_base, 0)"

/* A String at *p (before end): its bytes (NULL when cut short) and length;
 * *p moves past it. */
const uint8_t *nsc_ch_take_string(const uint8_t **p, const uint8_t *end, size_t *len);

/* Where a batch's rows come from: the batch identity of every row. */
typedef struct nsc_ch_origin {
    const char *agent;
    uint64_t epoch, batch_seq;
    uint32_t section;
} nsc_ch_origin;

/* One section's records into tabs[NSC_CH_*] (events, states, completions,
 * contexts, strings, its event marks and its batches row). The marks: the
 * range of the section's record times as the LMDB store's blocks bound
 * theirs (an event from its start to its stop or start, whichever is later;
 * a state's or completion's time), one row per bucket of times it touches
 * (NSC_CH_TIME_BITS; NSC_CH_TIME_WIDE past NSC_CH_TIME_SPAN), each with
 * the contexts of the section's P2p events (p2p_ctxs: up to
 * NSC_CH_P2P_CTXS_MAX, else NSC_CTX_NONE alone, "any"); none for a
 * section without records. */
void nsc_ch_rows_section(nsc_ch_cols tabs[NSC_CH_NTABLES], const nsc_ch_origin *o, const nsc_store_batch *b);
/* One lifecycle record; o->section is its index in the batch. */
void nsc_ch_rows_life(nsc_ch_cols *t, const nsc_ch_origin *o, const nsc_store_life *l);
/* A process's ledger batch (ledger.h) as it travelled (data, len: one row
 * of `ledger`) and decoded (b: a row of `ledger_recs` per record, idx its
 * index in the batch), and its marks (`ledger_marks`: a row per
 * communicator, bucket of seqs, ctx and rank among its records, idx the
 * first's); o's section is the batch's index among the agent batch's
 * ledgers. */
void nsc_ch_rows_ledger(nsc_ch_cols tabs[NSC_CH_NTABLES], const nsc_ch_origin *o, const nsc_proc *p,
                        const void *data, size_t len, const nsc_ledger_batch *b);
/* A host's clock model (serialized), versioned by the wall clock (ns) of the write. */
void nsc_ch_rows_clock(nsc_ch_cols *t, const char *host, const nsc_clock_model *m, uint64_t wall_ns);

/* A record of the wall clock of the collector's time base (nsc_store_wall_due). */
void nsc_ch_rows_wall(nsc_ch_cols *t, const nsc_store_wall_rec *r);

/* A rank's last collective of one function. */
void nsc_ch_rows_progress(nsc_ch_cols *t, const nsc_store_progress *p);

/* A job a flush inserts rows of, at wall_ns (ns): its newest insert, which
 * retention reads (chretain.h). */
void nsc_ch_rows_job(nsc_ch_cols *t, const char *job, uint64_t wall_ns);

/* A collector's live snapshot (nsc_live_snapshot), versioned by the wall
 * clock (ns) of the write. */
void nsc_ch_rows_live(nsc_ch_buf *buf, const char *collector, uint64_t wall_ns, const uint8_t *snap, size_t len);

#endif
