/* stats.c: counters and their Prometheus rendering (see stats.h). */
#include "stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"
#include "wire.h"

static const char *const wire_names[NSC_WIRE_NERR] = {
    "ok",          "empty",       "too_large",  "truncated", "bad_type",
    "too_many",    "too_deep",    "bad_version", "trailing", "bad_record",
    "bad_value",   "missing",     "nomem",      "full",     "bad_checksum"};

const char *nsc_rej_name(unsigned reason)
{
    static char names[NSC_REJ_COUNT][32];
    static const char *const own[NSC_REJ_A2C] = {"multipart", "kind", "clock", "ranks", "credit", "hosts"};
    if (reason >= NSC_REJ_COUNT)
        return "unknown";
    if (reason < NSC_REJ_A2C)
        return own[reason];
    /* Built once: nsc_stats_init names every reason before any thread starts. */
    if (!names[reason][0]) {
        int sec = reason >= NSC_REJ_SECTION;
        snprintf(names[reason], sizeof names[reason], "%s_%s", sec ? "section" : "a2c",
                 wire_names[reason - (sec ? NSC_REJ_SECTION : NSC_REJ_A2C)]);
    }
    return names[reason];
}

/* Commit latency buckets, microseconds. */
static const uint64_t lat_us[NSC_LAT_BUCKETS] = {100,   250,   500,    1000,   2500,   5000,
                                                 10000, 25000, 50000, 100000, 250000, 1000000};

int nsc_stats_init(nsc_stats *s)
{
    memset(s, 0, sizeof *s);
    s->agents = calloc(NSC_STATS_MAX_AGENTS, sizeof *s->agents);
    if (!s->agents || pthread_mutex_init(&s->mu, NULL)) {
        free(s->agents);
        return -1;
    }
    for (unsigned i = 0; i < NSC_REJ_COUNT; i++)
        nsc_rej_name(i);
    return 0;
}

void nsc_stats_free(nsc_stats *s)
{
    pthread_mutex_destroy(&s->mu);
    free(s->agents);
}

void nsc_stats_reject(nsc_stats *s, const char *agent, unsigned reason)
{
    pthread_mutex_lock(&s->mu);
    s->rejects[reason]++;
    uint32_t i = 0;
    while (i < s->nagents && strcmp(s->agents[i].agent, agent) != 0)
        i++;
    if (i == s->nagents) {
        if (s->nagents < NSC_STATS_MAX_AGENTS)
            s->nagents++;
        else
            i = NSC_STATS_MAX_AGENTS - 1;  /* too many agents: the last row is "other" */
        snprintf(s->agents[i].agent, sizeof s->agents[i].agent, "%s",
                 s->nagents == NSC_STATS_MAX_AGENTS && i == NSC_STATS_MAX_AGENTS - 1 ? "other" : agent);
    }
    s->agents[i].n[reason]++;
    pthread_mutex_unlock(&s->mu);
}

uint64_t nsc_stats_rejects(nsc_stats *s, unsigned reason)
{
    pthread_mutex_lock(&s->mu);
    uint64_t n = s->rejects[reason];
    pthread_mutex_unlock(&s->mu);
    return n;
}

void nsc_stats_commit(nsc_stats *s, uint64_t ns, uint64_t batches)
{
    atomic_fetch_add_explicit(&s->commits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->commit_ns_sum, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->commit_batches, batches, memory_order_relaxed);
    for (unsigned i = 0; i < NSC_LAT_BUCKETS; i++)
        if (ns <= lat_us[i] * 1000)
            atomic_fetch_add_explicit(&s->commit_le[i], 1, memory_order_relaxed);
}

static void metric(struct evbuffer *b, const char *name, const char *type, const char *help,
                   atomic_uint_fast64_t *v)
{
    nsc_prom_u64(b, name, type, help, (uint64_t)atomic_load_explicit(v, memory_order_relaxed));
}

static void render_rejects(nsc_stats *s, struct evbuffer *b)
{
    nsc_prom_head(b, "ncclscope_collector_rejects_total", "counter", "Messages rejected, by agent and reason");
    pthread_mutex_lock(&s->mu);
    for (uint32_t i = 0; i < s->nagents; i++)
        for (unsigned r = 0; r < NSC_REJ_COUNT; r++)
            if (s->agents[i].n[r]) {
                evbuffer_add_printf(b, "ncclscope_collector_rejects_total{agent=\"");
                nsc_prom_label(b, s->agents[i].agent);
                evbuffer_add_printf(b, "\",reason=\"%s\"} %" PRIu64 "\n", nsc_rej_name(r), s->agents[i].n[r]);
            }
    pthread_mutex_unlock(&s->mu);
}

static void render_latency(nsc_stats *s, struct evbuffer *b)
{
    const char *n = "ncclscope_collector_commit_seconds";
    nsc_prom_head(b, n, "histogram", "LMDB commit latency (one transaction, many batches)");
    for (unsigned i = 0; i < NSC_LAT_BUCKETS; i++)
        evbuffer_add_printf(b, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", n, (double)lat_us[i] / 1e6,
                            (uint64_t)atomic_load(&s->commit_le[i]));
    uint64_t count = atomic_load(&s->commits);
    evbuffer_add_printf(b, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n%s_sum %.9f\n%s_count %" PRIu64 "\n", n,
                        count, n, (double)atomic_load(&s->commit_ns_sum) / 1e9, n, count);
}

void nsc_stats_render(nsc_stats *s, struct evbuffer *b)
{
    metric(b, "ncclscope_collector_messages_in_total", "counter", "ZeroMQ messages received", &s->messages);
    metric(b, "ncclscope_collector_bytes_in_total", "counter", "Bytes received on the ingest socket", &s->bytes);
    metric(b, "ncclscope_collector_batches_in_total", "counter", "Batches stored (duplicates excluded)", &s->batches);
    metric(b, "ncclscope_collector_sections_in_total", "counter", "Process sections stored", &s->sections);
    metric(b, "ncclscope_collector_events_in_total", "counter", "Events stored", &s->events);
    metric(b, "ncclscope_collector_states_in_total", "counter", "States stored", &s->states);
    metric(b, "ncclscope_collector_completions_in_total", "counter", "Completions stored", &s->completions);
    metric(b, "ncclscope_collector_duplicates_total", "counter", "Batches received again and acknowledged without storing", &s->duplicates);
    metric(b, "ncclscope_collector_gap_refusals_total", "counter", "Batches refused (not stored, not acknowledged) because their agent has too many gaps", &s->gap_refusals);
    metric(b, "ncclscope_collector_handshake_failures_total", "counter", "Connections refused at the ZeroMQ handshake (CURVE key mismatch, plain peer on CURVE)", &s->handshake_failures);
    metric(b, "ncclscope_collector_acks_total", "counter", "Acknowledgements sent", &s->acks);
    metric(b, "ncclscope_collector_probes_total", "counter", "Clock probes answered", &s->probes);
    metric(b, "ncclscope_collector_samples_total", "counter", "Clock samples fitted", &s->samples);
    metric(b, "ncclscope_collector_clock_models_stored_total", "counter", "Clock models written to the store (a host's when it changed, at most every clock_persist_s): queries align times by the stored ones", &s->models_stored);
    metric(b, "ncclscope_collector_clock_udp_answers_total", "counter", "Clock probes answered on the UDP clock port", &s->udp_answers);
    metric(b, "ncclscope_collector_clock_udp_malformed_total", "counter", "Datagrams on the UDP clock port that were no probe (dropped unanswered)", &s->udp_malformed);
    metric(b, "ncclscope_collector_clock_udp_send_failures_total", "counter", "Answers on the UDP clock port that could not be sent", &s->udp_send_failures);
    metric(b, "ncclscope_collector_commit_failures_total", "counter", "Transactions that failed (nothing acknowledged)", &s->commit_failures);
    metric(b, "ncclscope_collector_dedupe_reload_failures_total", "counter", "Reloads of the committed batch sequences that failed (batches refused until one works)", &s->dedupe_reload_failures);
    metric(b, "ncclscope_collector_send_failures_total", "counter", "ZeroMQ sends that failed (acks and probe answers to agents, items to the writer); the message is dropped", &s->send_failures);
    metric(b, "ncclscope_collector_unknown_refusals_total", "counter", "Batches refused (not stored, not acknowledged) while the committed batch sequences could not be loaded", &s->unknown_refusals);
    metric(b, "ncclscope_collector_pxn_aliases_applied_total", "counter", "PXN proxy states moved to their origin event", &s->aliases_applied);
    metric(b, "ncclscope_collector_pxn_aliases_unplaced_total", "counter", "PXN aliases whose origin section was not in the batch", &s->aliases_unplaced);
    metric(b, "ncclscope_collector_ledger_records_stored_total", "counter", "Ledger records new to the store", &s->ledger_stored);
    metric(b, "ncclscope_collector_ledger_records_replaced_total", "counter", "Ledger records that replaced a stored one of their key (an in-flight record by a later one)", &s->ledger_replaced);
    metric(b, "ncclscope_collector_ledger_records_stale_total", "counter", "In-flight ledger records not stored: their collective is stored completed", &s->ledger_stale);
    metric(b, "ncclscope_collector_ledger_records_rejected_total", "counter", "Ledger records refused: malformed, or of a process with no section in the batch", &s->ledger_rejected);
    metric(b, "ncclscope_collector_ledger_batches_rejected_total", "counter", "Ledger batches that did not decode (the rest of their agent batch stored)", &s->ledger_bad_batches);
    metric(b, "ncclscope_collector_detail_fetches_total", "counter", "Detail fetches sent to agents (one per agent)", &s->detail_fetches);
    metric(b, "ncclscope_collector_detail_chunks_total", "counter", "Detail chunks received", &s->detail_chunks);
    metric(b, "ncclscope_collector_detail_pieces_total", "counter", "Raw sections received in detail chunks", &s->detail_pieces);
    metric(b, "ncclscope_collector_detail_batches_stored_total", "counter", "Batches of fetched detail new to the store", &s->detail_batches);
    metric(b, "ncclscope_collector_detail_bad_total", "counter", "Detail chunks, or batches of them, that did not decode", &s->detail_bad);
    metric(b, "ncclscope_collector_retained_blocks_total", "counter", "Blocks and ledger values deleted by retention", &s->retained_blocks);
    metric(b, "ncclscope_collector_retained_jobs_total", "counter", "Jobs deleted from ClickHouse by retention", &s->retained_jobs);
    metric(b, "ncclscope_collector_queue_depth", "gauge", "Messages waiting for the writer", &s->queue_depth);
    render_latency(s, b);
    render_rejects(s, b);
}
