/* stats.h: the collector's counters (Prometheus /metrics).
 *
 * Owns every counter the ingest and writer threads bump and the HTTP thread
 * reads: totals are relaxed atomics; rejects are counted per reason and per
 * agent under a mutex (the rare path). Renders the Prometheus text format.
 */
#ifndef NCCLSCOPE_COLLECTOR_STATS_H
#define NCCLSCOPE_COLLECTOR_STATS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "wire.h"

/* Reject reasons: a few of the collector's own, then one per wire error of
 * the a2c frame and one per wire error of a section (nsc_wire_err). */
enum {
    NSC_REJ_MULTIPART = 0,  /* a ZeroMQ message of several parts */
    NSC_REJ_KIND,           /* a kind the collector does not accept (ack, unknown) */
    NSC_REJ_CLOCK,          /* a clock sample the host's model refused */
    NSC_REJ_RANKS,          /* a context beyond max_ranks, or a rank outside its nranks */
    NSC_REJ_CREDIT,         /* a batch beyond the agent's credit (not acknowledged: sent again) */
    NSC_REJ_HOSTS,          /* a clock sample of a new host beyond max_hosts */
    NSC_REJ_A2C,            /* + -nsc_wire_err: the a2c message */
    NSC_REJ_SECTION = NSC_REJ_A2C + NSC_WIRE_NERR,  /* + -nsc_wire_err: a section of a batch */
    NSC_REJ_COUNT = NSC_REJ_SECTION + NSC_WIRE_NERR
};
const char *nsc_rej_name(unsigned reason);  /* "a2c_truncated", ... */

#define NSC_STATS_MAX_AGENTS 1024
#define NSC_LAT_BUCKETS 12

typedef struct nsc_agent_rejects {
    char agent[64];
    uint64_t n[NSC_REJ_COUNT];
} nsc_agent_rejects;

typedef struct nsc_stats {
    atomic_uint_fast64_t messages, bytes, batches, events, states, completions, sections;
    atomic_uint_fast64_t duplicates, gap_refusals, acks, probes, samples, commits;
    atomic_uint_fast64_t commit_failures, handshake_failures, dedupe_reload_failures, unknown_refusals;
    atomic_uint_fast64_t send_failures;
    atomic_uint_fast64_t udp_answers, udp_malformed, udp_send_failures;  /* uclock.h */
    atomic_uint_fast64_t commit_ns_sum, commit_batches, aliases_applied, aliases_unplaced;
    atomic_uint_fast64_t commit_le[NSC_LAT_BUCKETS];  /* commits at or under bucket i */
    atomic_uint_fast64_t retained_blocks, retained_jobs, queue_depth;
    atomic_uint_fast64_t models_stored;  /* clock models committed (writer.c) */
    /* ledger records (nsc_store_ledger_counts), and the ledger batches that
     * did not decode (their records unknown, the rest of the batch stored) */
    atomic_uint_fast64_t ledger_stored, ledger_replaced, ledger_stale, ledger_rejected, ledger_bad_batches;
    atomic_uint_fast64_t detail_fetches, detail_chunks, detail_pieces, detail_batches, detail_bad;  /* fetch.h */
    pthread_mutex_t mu;  /* guards the rejects */
    uint64_t rejects[NSC_REJ_COUNT];
    nsc_agent_rejects *agents;  /* NSC_STATS_MAX_AGENTS; the last slot takes the rest */
    uint32_t nagents;
} nsc_stats;

int nsc_stats_init(nsc_stats *s);
void nsc_stats_free(nsc_stats *s);
void nsc_stats_reject(nsc_stats *s, const char *agent, unsigned reason);
void nsc_stats_commit(nsc_stats *s, uint64_t ns, uint64_t batches);
/* Sum of the rejects of one reason (all agents). */
uint64_t nsc_stats_rejects(nsc_stats *s, unsigned reason);
/* Append the counters in Prometheus text format. */
void nsc_stats_render(nsc_stats *s, struct evbuffer *out);

#endif
