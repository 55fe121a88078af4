/* http.c: /healthz and /metrics (see http.h). */
#include "http.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/util.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hguard.h"
#include "ingest.h"
#include "prom.h"

/* The probes over the collector's UDP clock port (udpprobe.h). */
static void udp_metrics(struct evbuffer *b, const nsc_fwd_stats *f)
{
    static const char *const fam[][2] = {
        {"ncclscope_agent_clock_udp_probes_total", "Clock probes sent to the collector's UDP clock port"},
        {"ncclscope_agent_clock_udp_answers_total", "Answers on the UDP clock port matched to the newest probe"},
        {"ncclscope_agent_clock_udp_late_total", "Answers on the UDP clock port to an older probe (dropped)"},
        {"ncclscope_agent_clock_udp_foreign_total", "Answers on the UDP clock port to no probe sent (dropped)"},
        {"ncclscope_agent_clock_udp_malformed_total", "Datagrams on the UDP clock port that were no answer (dropped)"},
        {"ncclscope_agent_clock_udp_lost_total", "UDP probes never answered, or refused"},
        {"ncclscope_agent_clock_udp_fallbacks_total", "Falls back to ZeroMQ probes after UDP probes lost in a row"}};
    const uint64_t v[] = {f->udp.sent, f->udp.answered, f->udp.late, f->udp.foreign, f->udp.malformed, f->udp.lost,
                          f->udp_fallbacks};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        nsc_prom_u64(b, fam[i][0], "counter", fam[i][1], v[i]);
    nsc_prom_u64(b, "ncclscope_agent_clock_udp_active", "gauge", "1 while the clock probes go over UDP", f->udp_active);
}

/* The forwarder's and the clock's metrics (all zero without a collector). */
static void forward_metrics(const nsc_agent *a, struct evbuffer *b)
{
    nsc_fwd_stats f;
    memset(&f, 0, sizeof f);
    if (a->fwd)
        nsc_fwd_stats_get(a->fwd, &f);
    nsc_prom_u64(b, "ncclscope_agent_forward_batches_sent_total", "counter", "Batches sent to the collector (resends included)", f.batches_sent);
    nsc_prom_u64(b, "ncclscope_agent_forward_events_sent_total", "counter", "Events in batches sent (resends included)", f.events_sent);
    nsc_prom_u64(b, "ncclscope_agent_forward_bytes_sent_total", "counter", "Bytes of batches sent (resends included)", f.bytes_sent);
    nsc_prom_u64(b, "ncclscope_agent_forward_batches_acked_total", "counter", "Batches acknowledged and deleted from the spool", f.batches_acked);
    nsc_prom_u64(b, "ncclscope_agent_forward_events_acked_total", "counter", "Events in acknowledged batches", f.events_acked);
    nsc_prom_u64(b, "ncclscope_agent_forward_batches_resent_total", "counter", "Sends of batches sent before", f.batches_resent);
    evbuffer_add_printf(b, "# HELP ncclscope_agent_forward_rewinds_total Restarts of sending from the oldest unacknowledged batch\n"
                           "# TYPE ncclscope_agent_forward_rewinds_total counter\n"
                           "ncclscope_agent_forward_rewinds_total{reason=\"connect\"} %" PRIu64 "\n"
                           "ncclscope_agent_forward_rewinds_total{reason=\"timeout\"} %" PRIu64 "\n"
                           "ncclscope_agent_forward_rewinds_total{reason=\"failover\"} %" PRIu64 "\n",
                        f.rewinds_connect, f.rewinds_timeout, f.rewinds_failover);
    nsc_prom_u64(b, "ncclscope_agent_forward_acks_duplicate_total", "counter", "Acks of batches no longer in the spool", f.acks_duplicate);
    nsc_prom_u64(b, "ncclscope_agent_forward_bad_messages_total", "counter", "Messages from the collector that were malformed or not for this agent", f.bad_messages);
    evbuffer_add_printf(b, "# HELP ncclscope_agent_forward_quarantined_total Spooled batches moved to the quarantine, never sent again\n"
                           "# TYPE ncclscope_agent_forward_quarantined_total counter\n"
                           "ncclscope_agent_forward_quarantined_total{reason=\"corrupt\"} %" PRIu64 "\n"
                           "ncclscope_agent_forward_quarantined_total{reason=\"rejected\"} %" PRIu64 "\n",
                        f.corrupt, f.rejected);
    nsc_prom_u64(b, "ncclscope_agent_forward_delete_errors_total", "counter", "Spool deletions that failed (the batches stay and are sent again)", f.delete_errors);
    nsc_prom_u64(b, "ncclscope_agent_forward_inflight", "gauge", "Batches sent and not acknowledged", f.inflight);
    nsc_prom_u64(b, "ncclscope_agent_forward_inflight_bytes", "gauge", "Bytes of the batches sent and not acknowledged", f.inflight_bytes);
    nsc_prom_u64(b, "ncclscope_agent_forward_credit", "gauge", "Batches the collector allows in flight", f.credit);
    nsc_prom_u64(b, "ncclscope_agent_collector_connected", "gauge", "1 while a connection to the collector is up", f.connected);
    nsc_prom_u64(b, "ncclscope_agent_collector_connects_total", "counter", "Connections to the collector made", f.connects);
    nsc_prom_u64(b, "ncclscope_agent_collector_disconnects_total", "counter", "Connections to the collector lost", f.disconnects);
    nsc_prom_u64(b, "ncclscope_agent_collector_index", "gauge", "Position of the collector in use in the collector list (0: the first)", f.collector_index);
    nsc_prom_u64(b, "ncclscope_agent_collector_failovers_total", "counter", "Moves to another collector of the list after the one in use died or left the name's addresses", f.failovers);
    nsc_prom_u64(b, "ncclscope_agent_collector_rebalances_total", "counter", "Moves to an address that joined the name's and outweighs the collector in use for this agent", f.rebalances);
    if (a->fwd) {
        nsc_prom_head(b, "ncclscope_agent_collector_info", "gauge", "The collector endpoint in use");
        evbuffer_add_printf(b, "ncclscope_agent_collector_info{endpoint=\"");
        nsc_prom_label(b, nsc_fwd_endpoint(a->fwd));
        evbuffer_add_printf(b, "\"} 1\n");
    }
    if (a->res) {
        nsc_resolver_stats r;
        nsc_resolver_stats_get(a->res, &r);
        nsc_prom_u64(b, "ncclscope_agent_dns_resolutions_total", "counter", "Resolutions of the collector name that gave addresses", r.resolutions);
        nsc_prom_u64(b, "ncclscope_agent_dns_failures_total", "counter", "Resolutions of the collector name that failed (the last addresses stay)", r.failures);
        nsc_prom_u64(b, "ncclscope_agent_dns_addresses", "gauge", "Collector addresses of the name, as last resolved", r.addresses);
    }
    nsc_prom_u64(b, "ncclscope_agent_collector_handshake_failures_total", "counter", "Failed handshakes (CURVE keys, protocol)", f.handshake_failures);
    nsc_prom_u64(b, "ncclscope_agent_clock_probes_total", "counter", "Clock probes sent", f.probes_sent);
    nsc_prom_u64(b, "ncclscope_agent_clock_samples_total", "counter", "Clock samples completed and reported", f.samples);
    udp_metrics(b, &f);
    if (f.have_clock) {
        evbuffer_add_printf(b, "# HELP ncclscope_agent_clock_offset_seconds Collector clock minus agent clock (min-RTT recent sample)\n"
                               "# TYPE ncclscope_agent_clock_offset_seconds gauge\nncclscope_agent_clock_offset_seconds %.9f\n"
                               "# HELP ncclscope_agent_clock_rtt_seconds Round trip of that sample\n"
                               "# TYPE ncclscope_agent_clock_rtt_seconds gauge\nncclscope_agent_clock_rtt_seconds %.9f\n",
                            (double)f.offset_ns / 1e9, (double)f.rtt_ns / 1e9);
    }
}

/* The self-cost guard's per-process families (docs/plugin.md) and the
 * plugin's count of NCCL's and a chained plugin's faults, for the processes
 * the registry knows, as their plugins last counted: a family's samples must
 * follow its head, so there is one pass over the processes per family. */
enum { COST_SECONDS, COLL_SECONDS, SHED_EVENTS, SHED_MASK, CHAIN_ERRORS, ORPHANS, COST_OUTLIERS };
typedef struct proc_family {
    struct evbuffer *b;
    const char *name;
    int which;
} proc_family;

static void proc_sample(void *arg, const nsc_reg_proc *p)
{
    const proc_family *f = arg;
    const nsc_counters *c = &p->counters;
    evbuffer_add_printf(f->b, "%s{job=\"", f->name);
    nsc_prom_label(f->b, p->id.job);
    evbuffer_add_printf(f->b, "\",pid=\"%" PRIu32 "\"} ", p->id.pid);
    if (f->which == COST_SECONDS || f->which == COLL_SECONDS)
        evbuffer_add_printf(f->b, "%.9f\n", (double)(f->which == COST_SECONDS ? c->cost_ns : c->coll_ns) / 1e9);
    else
        evbuffer_add_printf(f->b, "%" PRIu64 "\n", f->which == SHED_EVENTS    ? c->shed_events
                                                    : f->which == SHED_MASK    ? c->shed_mask
                                                    : f->which == CHAIN_ERRORS ? c->chain_errors
                                                    : f->which == ORPHANS      ? c->orphans
                                                                               : c->cost_outliers);
}

static void guard_metrics(const nsc_agent *a, struct evbuffer *b)
{
    static const struct {
        const char *name, *type, *help;
    } fam[] = {
        [COST_SECONDS] = {"ncclscope_agent_process_profiler_cost_seconds_total", "counter",
                          "The plugin's own time on NCCL's threads (sampled estimate), per process"},
        [COLL_SECONDS] = {"ncclscope_agent_process_collective_seconds_total", "counter",
                          "Time of the process's collectives (Coll events), against which the cost is judged"},
        [SHED_EVENTS] = {"ncclscope_agent_process_shed_events_total", "counter",
                         "Events the self-cost guard did not record (NCCLSCOPE_BUDGET_PCT)"},
        [SHED_MASK] = {"ncclscope_agent_process_shed_types", "gauge",
                       "Event types the self-cost guard sheds now, as a mask of 1 << type"},
        [CHAIN_ERRORS] = {"ncclscope_agent_process_chain_errors_total", "counter",
                          "Calls of the chained profiler plugin (NCCLSCOPE_CHAIN) that failed, init included"},
        [ORPHANS] = {"ncclscope_agent_process_orphan_children_total", "counter",
                     "ProxyOp and KernelCh events NCCL started under a NULL parent"},
        [COST_OUTLIERS] = {"ncclscope_agent_process_cost_outliers_total", "counter",
                           "Cost samples the plugin left out as the thread not running (counted as its median)"},
    };
    for (int i = 0; i < (int)(sizeof fam / sizeof fam[0]); i++) {
        proc_family f = {b, fam[i].name, i};
        nsc_prom_head(b, fam[i].name, fam[i].type, fam[i].help);
        nsc_reg_each(a->reg, proc_sample, &f);
    }
}

/* A reply of `type` that render writes into a fresh buffer. */
static void reply(struct evhttp_request *req, nsc_agent *a, void (*render)(nsc_agent *, struct evbuffer *),
                  const char *type)
{
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    render(a, b);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
    evhttp_send_reply(req, HTTP_OK, "OK", b);
    evbuffer_free(b);
}

static void render_ledger(nsc_agent *a, struct evbuffer *b, const nsc_out_stats *os)
{
    nsc_lbuild_stats ls;
    nsc_lbuild_stats_get(a->lb, &ls);
    nsc_prom_head(b, "ncclscope_agent_ledger_records_total", "counter", "Ledger records built, completed or in flight");
    evbuffer_add_printf(b, "ncclscope_agent_ledger_records_total{kind=\"completed\"} %" PRIu64 "\n"
                           "ncclscope_agent_ledger_records_total{kind=\"inflight\"} %" PRIu64 "\n", ls.records, ls.inflight);
    nsc_prom_u64(b, "ncclscope_agent_ledger_open", "gauge", "Collectives open in the ledger builder", ls.open);
    nsc_prom_u64(b, "ncclscope_agent_ledger_spooled_total", "counter", "Ledger records written to the spool", os->ledger_records);
    nsc_prom_u64(b, "ncclscope_agent_ledger_bytes_total", "counter", "Bytes of the ledger batches written to the spool", os->ledger_bytes);
    nsc_prom_u64(b, "ncclscope_agent_ledger_stale_gpu_timers_total", "counter",
                 "KernelChs whose GPU timers were other work's (NCCL's KernelCh drift): not used", ls.stale_timers);
    nsc_prom_u64(b, "ncclscope_agent_ledger_written_early_total", "counter",
                 "Completed records written before ledger_pxn_wait_ms (ledger_max_open reached): PXN legs after them count as late",
                 ls.early);
    nsc_prom_head(b, "ncclscope_agent_ledger_unattached_total", "counter", "Events, states or collectives the ledger could not attach, by reason");
    for (unsigned i = 0; i < NSC_LB_NREASONS; i++)
        evbuffer_add_printf(b, "ncclscope_agent_ledger_unattached_total{reason=\"%s\"} %" PRIu64 "\n",
                            nsc_lbuild_reason(i), ls.unattached[i]);
}

/* detail = on-demand: the ring (all zero without one) and the fetches answered. */
static void render_detail(nsc_agent *a, struct evbuffer *b, const nsc_out_stats *os)
{
    nsc_ring_stats rs = {0};
    nsc_fetch_stats fs;
    if (a->ring)
        nsc_ring_stats_get(a->ring, &rs);
    nsc_fetch_stats_get(a->fetch, &fs);
    nsc_prom_u64(b, "ncclscope_agent_detail_records_total", "counter", "Raw records (events, states, completions) kept in the detail ring instead of the spool", os->raw_records);
    nsc_prom_u64(b, "ncclscope_agent_detail_lost_records_total", "counter", "Raw records of batches the spool refused, not kept in the ring", os->raw_lost);
    nsc_prom_u64(b, "ncclscope_agent_detail_ring_pieces", "gauge", "Raw sections in the detail ring", rs.pieces);
    nsc_prom_u64(b, "ncclscope_agent_detail_ring_bytes", "gauge", "Bytes of the detail ring's sections", rs.bytes);
    nsc_prom_u64(b, "ncclscope_agent_detail_ring_cap_bytes", "gauge", "The detail ring's size (detail_ring_mb)", rs.cap_bytes);
    nsc_prom_u64(b, "ncclscope_agent_detail_ring_put_total", "counter", "Raw sections kept in the ring", rs.put_pieces);
    nsc_prom_u64(b, "ncclscope_agent_detail_ring_dropped_total", "counter", "Raw sections dropped, oldest first, for room or age", rs.dropped_pieces);
    nsc_prom_u64(b, "ncclscope_agent_detail_ring_dropped_bytes_total", "counter", "Bytes of the raw sections dropped", rs.dropped_bytes);
    nsc_prom_u64(b, "ncclscope_agent_detail_ring_refused_total", "counter", "Raw sections never kept (larger than the ring, older than detail_ring_s, or a storage error)", rs.refused_pieces);
    nsc_prom_u64(b, "ncclscope_agent_detail_ring_errors_total", "counter", "Detail ring storage errors", rs.errors);
    nsc_prom_u64(b, "ncclscope_agent_detail_fetches_total", "counter", "Detail fetches taken from the collector", fs.fetches);
    nsc_prom_u64(b, "ncclscope_agent_detail_fetches_answered_total", "counter", "Detail fetches answered to the last chunk", fs.answered);
    nsc_prom_u64(b, "ncclscope_agent_detail_fetches_refused_total", "counter", "Detail fetches answered empty at once (queue full)", fs.refused);
    nsc_prom_u64(b, "ncclscope_agent_detail_chunks_total", "counter", "Detail chunks sent", fs.chunks);
    nsc_prom_u64(b, "ncclscope_agent_detail_pieces_sent_total", "counter", "Raw sections sent in detail chunks", fs.pieces);
    nsc_prom_u64(b, "ncclscope_agent_detail_bytes_sent_total", "counter", "Bytes of detail chunks sent", fs.bytes);
}

static void render_metrics(nsc_agent *a, struct evbuffer *b)
{
    nsc_reg_counts rc;
    nsc_pxn_stats px;
    nsc_spool_stats sp;
    nsc_out_stats os;
    nsc_reg_counts_get(a->reg, &rc);
    nsc_pxn_stats_get(a->pxn, &px);
    nsc_spool_stats_get(a->spool, &sp);
    nsc_out_stats_get(a->out, &os);
    nsc_prom_u64(b, "ncclscope_agent_messages_in_total", "counter", "Messages received on the ipc socket", a->in.messages);
    nsc_prom_u64(b, "ncclscope_agent_bytes_in_total", "counter", "Bytes received on the ipc socket", a->in.bytes);
    nsc_prom_u64(b, "ncclscope_agent_events_in_total", "counter", "Events in accepted batches", a->in.events);
    nsc_prom_u64(b, "ncclscope_agent_states_in_total", "counter", "States in accepted batches", a->in.states);
    nsc_prom_u64(b, "ncclscope_agent_completions_in_total", "counter", "Completions in accepted batches", a->in.completions);
    nsc_prom_head(b, "ncclscope_agent_rejects_total", "counter", "Messages rejected, by reason");
    for (unsigned i = 0; i < NSC_REJECT_COUNT; i++)
        if (nsc_ingest_reason(i))
            evbuffer_add_printf(b, "ncclscope_agent_rejects_total{reason=\"%s\"} %" PRIu64 "\n",
                                nsc_ingest_reason(i), a->in.rejects[i]);
    nsc_prom_u64(b, "ncclscope_agent_batches_duplicate_total", "counter", "Plugin batches dropped as stored before (resent after a restart)", a->in.duplicates);
    nsc_prom_u64(b, "ncclscope_agent_batches_out_of_order_total", "counter", "Plugin batches dropped after a gap in their stream (a resend asked)", a->in.out_of_order);
    nsc_prom_u64(b, "ncclscope_agent_acks_sent_total", "counter", "Acknowledgements and resend requests published to the plugins", a->in.acks_sent);
    nsc_prom_u64(b, "ncclscope_agent_spool_streams", "gauge", "Plugin streams with a mark in the spool", nsc_spool_streams_count(a->spool));
    nsc_prom_u64(b, "ncclscope_agent_streams_forgotten_total", "counter", "Marks of streams not heard within linger_ms of the start, deleted", a->in.streams_forgotten);
    nsc_prom_u64(b, "ncclscope_agent_ledger_restored_total", "counter", "Processes whose open ledger collectives a killed predecessor saved, taken back", a->in.ledger_restored);
    nsc_prom_u64(b, "ncclscope_agent_ledger_restore_refused_total", "counter", "Saved ledger states not taken back (another build's layout, or no memory)", a->in.ledger_refused);
    nsc_prom_u64(b, "ncclscope_agent_definitions_dropped_total", "counter", "String/context definitions the registry could not keep", a->in.table_full);
    nsc_prom_u64(b, "ncclscope_agent_records_lost_total", "counter", "Records lost to allocation failures or reaped processes", a->in.nomem + a->in.lost);
    nsc_prom_u64(b, "ncclscope_agent_foreign_events_total", "counter", "PXN events handed to the resolver", a->in.foreign);
    nsc_prom_u64(b, "ncclscope_agent_pxn_resolved_total", "counter", "PXN events re-attached to their origin", px.resolved);
    nsc_prom_u64(b, "ncclscope_agent_pxn_unresolved_total", "counter", "PXN events forwarded flagged unresolved", px.unresolved);
    nsc_prom_u64(b, "ncclscope_agent_pxn_pending", "gauge", "PXN events waiting for their origin", px.pending);
    nsc_prom_u64(b, "ncclscope_agent_pxn_overflow_total", "counter", "PXN events not held because the queue was full", px.overflow);
    render_ledger(a, b, &os);
    render_detail(a, b, &os);
    nsc_prom_u64(b, "ncclscope_agent_pxn_restored_total", "counter", "PXN events a killed predecessor held, taken back from the spool", px.restored);
    evbuffer_add_printf(b, "# HELP ncclscope_agent_processes Known processes by state\n"
                           "# TYPE ncclscope_agent_processes gauge\n"
                           "ncclscope_agent_processes{state=\"alive\"} %" PRIu64 "\n"
                           "ncclscope_agent_processes{state=\"dead\"} %" PRIu64 "\n", rc.alive, rc.dead);
    nsc_prom_u64(b, "ncclscope_agent_processes_started_total", "counter", "Processes seen for the first time", rc.started_total);
    nsc_prom_u64(b, "ncclscope_agent_processes_died_total", "counter", "Processes reported dead", rc.died_total);
    nsc_prom_u64(b, "ncclscope_agent_events_out_total", "counter", "Events written to the spool", os.events);
    nsc_prom_u64(b, "ncclscope_agent_spool_batches_total", "counter", "Batches written to the spool", os.batches);
    nsc_prom_u64(b, "ncclscope_agent_spool_entries", "gauge", "Batches in the spool", sp.entries);
    nsc_prom_u64(b, "ncclscope_agent_spool_bytes", "gauge", "Bytes of batches in the spool", sp.bytes);
    nsc_prom_u64(b, "ncclscope_agent_spool_cap_bytes", "gauge", "Spool size cap", sp.cap_bytes);
    nsc_prom_u64(b, "ncclscope_agent_spool_refused_entries_total", "counter", "Batches refused by the spool", sp.refused_entries);
    nsc_prom_u64(b, "ncclscope_agent_spool_refused_bytes_total", "counter", "Bytes of refused batches", sp.refused_bytes);
    nsc_prom_u64(b, "ncclscope_agent_spool_refused_events_total", "counter", "Events in refused batches", sp.refused_events);
    nsc_prom_u64(b, "ncclscope_agent_spool_refused_records_total", "counter", "Records in refused batches", sp.refused_records);
    nsc_prom_u64(b, "ncclscope_agent_spool_quarantined_entries_total", "counter", "Batches in the spool's quarantine (corrupt or rejected)", sp.quarantined_entries);
    nsc_prom_u64(b, "ncclscope_agent_spool_quarantined_bytes_total", "counter", "Bytes of quarantined batches", sp.quarantined_bytes);
    nsc_prom_u64(b, "ncclscope_agent_spool_quarantined_events_total", "counter", "Events in quarantined batches (not delivered)", sp.quarantined_events);
    nsc_prom_u64(b, "ncclscope_agent_spool_quarantined_records_total", "counter", "Records in quarantined batches", sp.quarantined_records);
    nsc_prom_u64(b, "ncclscope_agent_spool_errors_total", "counter", "Storage errors (batches refused for them)", sp.errors);
    forward_metrics(a, b);
    guard_metrics(a, b);
    nsc_hguard_render(a->hguard, "ncclscope_agent", b);
    nsc_hstall_render(&a->stall, "ncclscope_agent", b);
    nsc_prom_u64(b, "ncclscope_agent_uptime_seconds", "gauge", "Seconds since start", (nsc_mono_ns() - a->start_ns) / 1000000000u);
}

static void metrics(struct evhttp_request *req, void *arg)
{
    reply(req, arg, render_metrics, "text/plain; version=0.0.4");
}

static void healthz(struct evhttp_request *req, void *arg);

/* Every request: the guard learns it arrived whole, then its route. */
static void route(struct evhttp_request *req, void *arg)
{
    nsc_agent *a = arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    nsc_hguard_busy(a->hguard, req);
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET)
        evhttp_send_error(req, HTTP_BADMETHOD, NULL);
    else if (path && strcmp(path, "/metrics") == 0)
        metrics(req, a);
    else if (path && strcmp(path, "/healthz") == 0)
        healthz(req, a);
    else
        evhttp_send_error(req, HTTP_NOTFOUND, NULL);
}

/* "true", "false", or "null" without a collector. */
static const char *collector_connected(const nsc_agent *a)
{
    if (!a->fwd)
        return "null";
    nsc_fwd_stats f;
    nsc_fwd_stats_get(a->fwd, &f);
    return f.connected ? "true" : "false";
}

static void render_health(nsc_agent *a, struct evbuffer *b)
{
    nsc_reg_counts rc;
    nsc_spool_stats sp;
    nsc_reg_counts_get(a->reg, &rc);
    nsc_spool_stats_get(a->spool, &sp);
    evbuffer_add_printf(b, "{\"status\":\"ok\",\"agent_id\":\"%s\",\"host\":\"%s\",\"uptime_ns\":%" PRIu64
                           ",\"processes_alive\":%" PRIu64 ",\"processes_dead\":%" PRIu64
                           ",\"spool_entries\":%" PRIu64 ",\"spool_bytes\":%" PRIu64
                           ",\"spool_refused_entries\":%" PRIu64 ",\"collector_connected\":%s}\n",
                        a->cfg.agent_id, a->cfg.host, nsc_mono_ns() - a->start_ns, rc.alive, rc.dead,
                        sp.entries, sp.bytes, sp.refused_entries, collector_connected(a));
}

static void healthz(struct evhttp_request *req, void *arg) { reply(req, arg, render_health, "application/json"); }

/* Write "ADDR:PORT" of the bound socket to <rundir>/agent.http. */
static int publish(nsc_agent *a, struct evhttp_bound_socket *bs, char err[256])
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[64], path[PATH_MAX + 16];
    if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl) != 0 || ss.ss_family != AF_INET) {
        snprintf(err, 256, "http: cannot read the bound address");
        return -1;
    }
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &sin->sin_addr, host, sizeof host);
    snprintf(path, sizeof path, "%s/agent.http", a->cfg.rundir);
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, 256, "http: cannot write %.200s", path);
        return -1;
    }
    fprintf(f, "%s:%u\n", host, (unsigned)ntohs(sin->sin_port));
    return fclose(f) == 0 ? 0 : -1;
}

int nsc_http_start(nsc_agent *a, char err[256])
{
    char addr[128];
    if (strcmp(a->cfg.http, "off") == 0)
        return 0;
    snprintf(addr, sizeof addr, "%s", a->cfg.http);
    char *colon = strrchr(addr, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || !end || *end || port < 0 || port > 65535) {
        snprintf(err, 256, "http: '%s' is not ADDR:PORT", a->cfg.http);
        return -1;
    }
    *colon = 0;
    struct evhttp_bound_socket *bs;
    if (!(a->base = event_base_new()) || !(a->http = evhttp_new(a->base)) ||
        !(bs = evhttp_bind_socket_with_handle(a->http, addr, (uint16_t)port)) ||
        !(a->hguard = nsc_hguard_new(a->base, a->http, bs, &a->cfg.hg, "ncclscope-agent"))) {
        snprintf(err, 256, "http: cannot listen on %s", a->cfg.http);
        return -1;
    }
    evhttp_set_gencb(a->http, route, a);
    return publish(a, bs, err);
}

void nsc_http_stop(nsc_agent *a)
{
    nsc_hguard_free(a->hguard);  /* before the connections go: it owns their close callbacks */
    a->hguard = NULL;
    if (a->http)
        evhttp_free(a->http);
    if (a->base)
        event_base_free(a->base);
    a->http = NULL;
    a->base = NULL;
}
