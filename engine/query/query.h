/* query.h: the read side of the store, shared by the collector's HTTP API and
 * the CLI's --db mode.
 *
 * Owns the query endpoints (comms, timeline, collectives, topology, stats,
 * p2p, ledger): their parameters (parsed from a URL query string, validated
 * strictly), the derived records computed from a store reader (collectives
 * matched across ranks, arrival skew, bandwidths, ring order, Send/Recv
 * pairs, aligned times), and the JSON
 * they write. Results go out incrementally through a write callback, so the
 * memory of timeline does not grow with its result. The schema of every
 * endpoint is docs/api.md.
 *
 * Errors: NSC_QUERY_* (qbase.h); err gets a one-line message for the caller to
 * show (HTTP: {"error": "..."} with 400 for EPARAM, 404 for EUNKNOWN and
 * ENOTFOUND, 500 for ESTORE; EWRITE means the reader asked to stop: its
 * write callback, or its stop flag).
 */
#ifndef NCCLSCOPE_QUERY_H
#define NCCLSCOPE_QUERY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "qbase.h"
#include "store.h"

/* name: "comms", "timeline", "collectives", "topology", "stats", "p2p",
 * "ledger".
 * qs: the URL query string without '?' ("job=1234&comm=0x1f&t0_ns=5"), or
 * NULL. Values are percent-decoded; '+' is a space. Parameters (docs/api.md):
 * job, comm, rank (list and ranges: "0,2,4-7"), t0_ns, t1_ns, func, seq
 * ("5" or "5-9"), type (event types, timeline), limit, cursor, format.
 * Returns 0 and *out (free with nsc_query_free), or an error and err. */
int nsc_query_parse(const char *name, const char *qs, nsc_query **out, char *err, size_t errcap);

/* Run q against one read transaction. Returns 0, or an error with err set.
 * After an error some output may already have been written (a streamed
 * result ends without its final {"kind":"end"} line then). */
int nsc_query_run(const nsc_query *q, nsc_store_reader *rd, nsc_query_write_fn fn, void *arg,
                  char *err, size_t errcap);

/* "application/json" or "application/x-ndjson" (timeline, collectives, ledger). */
const char *nsc_query_content_type(const nsc_query *q);
/* The endpoint name q was parsed for. */
const char *nsc_query_name(const nsc_query *q);
/* The job q names (decoded), or NULL when it names none. */
const char *nsc_query_job(const nsc_query *q);
/* The window of a first page (no cursor) of a job q names: [t0_ns, t1_ns]
 * as asked (0 and UINT64_MAX when not). 0, or -1 when q names no job or is
 * a later page. */
int nsc_query_first_window(const nsc_query *q, uint64_t *t0, uint64_t *t1);
/* The HTTP status for an error code (200, 400, 404, 500). */
int nsc_query_http_status(int err);
/* What a collector with on-demand detail fetched for q (a JSON object,
 * copied): the timeline's header carries it as "detail". 0 or -1 (memory). */
int nsc_query_set_detail(nsc_query *q, const char *json);
/* Once *stop is nonzero q ends at its next block read (EWRITE): a scan of a
 * whole job runs long before it writes, and its reader may have to let go
 * at once (a collector that stops joins the thread). NULL: it never does. */
void nsc_query_set_stop(nsc_query *q, const atomic_int *stop);
void nsc_query_free(nsc_query *q);

/* What a query of the ledger (ledger, collectives, stats) reads of its
 * job, for a store that can read less than a whole job (ClickHouse): the
 * job, the communicator's id, the seqs [seq_lo, seq_hi] and the span of the
 * asked ranks [rank_lo, rank_hi] (collectives and stats read the raw events
 * instead where the ledger has no record there), and for collectives and
 * stats the time window [t0, t1] (aligned; t0 0: none, and with
 * clock=causal, whose bounds come from every collective, or func): what
 * they answer is made of the records of the seqs enqueued in it, each
 * rank's records enqueued from t0 on to its last of those seqs, and its
 * last record before t0 whose kernel ended (its previous kernel end). 0,
 * or -1 when q is none of
 * these or does not name its job and its communicator by id (the whole job
 * is read then). */
typedef struct nsc_query_scope {
    const char *job;
    uint64_t comm, seq_lo, seq_hi, t0, t1;
    int32_t rank_lo, rank_hi;
    int events;  /* nsc_query_event_scope's: job and time window alone */
    int defs;    /* with events: the definitions and clocks alone, no event */
    int p2p;     /* with events: the blocks holding the communicator's P2p events alone */
} nsc_query_scope;
int nsc_query_ledger_scope(const nsc_query *q, nsc_query_scope *out);
/* What a raw-event query reads of its job, for such a store: the job's
 * contexts, strings and clock models, and for a timeline with a time
 * window, of its events the stored blocks that reach into [t0, t1]
 * (aligned; t0 0, t1 UINT64_MAX: open) of the ranks in [rank_lo, rank_hi]
 * of the communicator comm (0: not named by id, every process's blocks);
 * for p2p, with a window or without, those of them that hold the
 * communicator's P2p events (p2p set); for comms no event (defs set).
 * events set, seqs 0. 0, or -1 when q is none of these naming its job, or
 * reads the ledger (clock=causal): the whole job is read then. */
int nsc_query_event_scope(const nsc_query *q, nsc_query_scope *out);
/* Whether q reads the ledger: all but timeline and p2p, which read the raw
 * events alone unless clock=causal narrows the clocks by the ledger's
 * collectives. A store without the ledger answers q alike when it does not
 * (ClickHouse: such a store does not grow with the job's ledger records). */
int nsc_query_reads_ledger(const nsc_query *q);

#endif
