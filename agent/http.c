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

#include "ingest.h"

static void counter(struct evbuffer *b, const char *name, const char *help, const char *type, uint64_t v)
{
    evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", name, help, name, type, name, v);
}

/* The forwarder's and the clock's metrics (all zero without a collector). */
static void forward_metrics(const nsc_agent *a, struct evbuffer *b)
{
    nsc_fwd_stats f;
    memset(&f, 0, sizeof f);
    if (a->fwd)
        nsc_fwd_stats_get(a->fwd, &f);
    counter(b, "ncclscope_agent_forward_batches_sent_total", "Batches sent to the collector (resends included)", "counter", f.batches_sent);
    counter(b, "ncclscope_agent_forward_events_sent_total", "Events in batches sent (resends included)", "counter", f.events_sent);
    counter(b, "ncclscope_agent_forward_bytes_sent_total", "Bytes of batches sent (resends included)", "counter", f.bytes_sent);
    counter(b, "ncclscope_agent_forward_batches_acked_total", "Batches acknowledged and deleted from the spool", "counter", f.batches_acked);
    counter(b, "ncclscope_agent_forward_events_acked_total", "Events in acknowledged batches", "counter", f.events_acked);
    counter(b, "ncclscope_agent_forward_batches_resent_total", "Sends of batches sent before", "counter", f.batches_resent);
    evbuffer_add_printf(b, "# HELP ncclscope_agent_forward_rewinds_total Restarts of sending from the oldest unacknowledged batch\n"
                           "# TYPE ncclscope_agent_forward_rewinds_total counter\n"
                           "ncclscope_agent_forward_rewinds_total{reason=\"connect\"} %" PRIu64 "\n"
                           "ncclscope_agent_forward_rewinds_total{reason=\"timeout\"} %" PRIu64 "\n",
                        f.rewinds_connect, f.rewinds_timeout);
    counter(b, "ncclscope_agent_forward_acks_duplicate_total", "Acks of batches no longer in the spool", "counter", f.acks_duplicate);
    counter(b, "ncclscope_agent_forward_bad_messages_total", "Messages from the collector that were malformed or not for this agent", "counter", f.bad_messages);
    counter(b, "ncclscope_agent_forward_delete_errors_total", "Spool deletions that failed (the batches stay and are sent again)", "counter", f.delete_errors);
    counter(b, "ncclscope_agent_forward_inflight", "Batches sent and not acknowledged", "gauge", f.inflight);
    counter(b, "ncclscope_agent_forward_inflight_bytes", "Bytes of the batches sent and not acknowledged", "gauge", f.inflight_bytes);
    counter(b, "ncclscope_agent_forward_credit", "Batches the collector allows in flight", "gauge", f.credit);
    counter(b, "ncclscope_agent_collector_connected", "1 while a connection to the collector is up", "gauge", f.connected);
    counter(b, "ncclscope_agent_collector_connects_total", "Connections to the collector made", "counter", f.connects);
    counter(b, "ncclscope_agent_collector_disconnects_total", "Connections to the collector lost", "counter", f.disconnects);
    counter(b, "ncclscope_agent_collector_handshake_failures_total", "Failed handshakes (CURVE keys, protocol)", "counter", f.handshake_failures);
    counter(b, "ncclscope_agent_clock_probes_total", "Clock probes sent", "counter", f.probes_sent);
    counter(b, "ncclscope_agent_clock_samples_total", "Clock samples completed and reported", "counter", f.samples);
    if (f.have_clock) {
        evbuffer_add_printf(b, "# HELP ncclscope_agent_clock_offset_seconds Collector clock minus agent clock (min-RTT recent sample)\n"
                               "# TYPE ncclscope_agent_clock_offset_seconds gauge\nncclscope_agent_clock_offset_seconds %.9f\n"
                               "# HELP ncclscope_agent_clock_rtt_seconds Round trip of that sample\n"
                               "# TYPE ncclscope_agent_clock_rtt_seconds gauge\nncclscope_agent_clock_rtt_seconds %.9f\n",
                            (double)f.offset_ns / 1e9, (double)f.rtt_ns / 1e9);
    }
}

static void metrics(struct evhttp_request *req, void *arg)
{
    nsc_agent *a = arg;
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    nsc_reg_counts rc;
    nsc_pxn_stats px;
    nsc_spool_stats sp;
    nsc_out_stats os;
    nsc_reg_counts_get(a->reg, &rc);
    nsc_pxn_stats_get(a->pxn, &px);
    nsc_spool_stats_get(a->spool, &sp);
    nsc_out_stats_get(a->out, &os);
    counter(b, "ncclscope_agent_messages_in_total", "Messages received on the ipc socket", "counter", a->in.messages);
    counter(b, "ncclscope_agent_bytes_in_total", "Bytes received on the ipc socket", "counter", a->in.bytes);
    counter(b, "ncclscope_agent_events_in_total", "Events in accepted batches", "counter", a->in.events);
    counter(b, "ncclscope_agent_states_in_total", "States in accepted batches", "counter", a->in.states);
    counter(b, "ncclscope_agent_completions_in_total", "Completions in accepted batches", "counter", a->in.completions);
    evbuffer_add_printf(b, "# HELP ncclscope_agent_rejects_total Messages rejected, by reason\n"
                           "# TYPE ncclscope_agent_rejects_total counter\n");
    for (unsigned i = 0; i < NSC_REJECT_COUNT; i++)
        if (nsc_ingest_reason(i))
            evbuffer_add_printf(b, "ncclscope_agent_rejects_total{reason=\"%s\"} %" PRIu64 "\n",
                                nsc_ingest_reason(i), a->in.rejects[i]);
    counter(b, "ncclscope_agent_definitions_dropped_total", "String/context definitions the registry could not keep", "counter", a->in.table_full);
    counter(b, "ncclscope_agent_records_lost_total", "Records lost to allocation failures or reaped processes", "counter", a->in.nomem + a->in.lost);
    counter(b, "ncclscope_agent_foreign_events_total", "PXN events handed to the resolver", "counter", a->in.foreign);
    counter(b, "ncclscope_agent_pxn_resolved_total", "PXN events re-attached to their origin", "counter", px.resolved);
    counter(b, "ncclscope_agent_pxn_unresolved_total", "PXN events forwarded flagged unresolved", "counter", px.unresolved);
    counter(b, "ncclscope_agent_pxn_pending", "PXN events waiting for their origin", "gauge", px.pending);
    counter(b, "ncclscope_agent_pxn_overflow_total", "PXN events not held because the queue was full", "counter", px.overflow);
    evbuffer_add_printf(b, "# HELP ncclscope_agent_processes Known processes by state\n"
                           "# TYPE ncclscope_agent_processes gauge\n"
                           "ncclscope_agent_processes{state=\"alive\"} %" PRIu64 "\n"
                           "ncclscope_agent_processes{state=\"dead\"} %" PRIu64 "\n", rc.alive, rc.dead);
    counter(b, "ncclscope_agent_processes_started_total", "Processes seen for the first time", "counter", rc.started_total);
    counter(b, "ncclscope_agent_processes_died_total", "Processes reported dead", "counter", rc.died_total);
    counter(b, "ncclscope_agent_events_out_total", "Events written to the spool", "counter", os.events);
    counter(b, "ncclscope_agent_spool_batches_total", "Batches written to the spool", "counter", os.batches);
    counter(b, "ncclscope_agent_spool_entries", "Batches in the spool", "gauge", sp.entries);
    counter(b, "ncclscope_agent_spool_bytes", "Bytes of batches in the spool", "gauge", sp.bytes);
    counter(b, "ncclscope_agent_spool_cap_bytes", "Spool size cap", "gauge", sp.cap_bytes);
    counter(b, "ncclscope_agent_spool_refused_entries_total", "Batches refused by the spool", "counter", sp.refused_entries);
    counter(b, "ncclscope_agent_spool_refused_bytes_total", "Bytes of refused batches", "counter", sp.refused_bytes);
    counter(b, "ncclscope_agent_spool_refused_events_total", "Events in refused batches", "counter", sp.refused_events);
    counter(b, "ncclscope_agent_spool_refused_records_total", "Records in refused batches", "counter", sp.refused_records);
    counter(b, "ncclscope_agent_spool_errors_total", "Storage errors (batches refused for them)", "counter", sp.errors);
    forward_metrics(a, b);
    counter(b, "ncclscope_agent_uptime_seconds", "Seconds since start", "gauge", (nsc_agent_now() - a->start_ns) / 1000000000u);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4");
    evhttp_send_reply(req, HTTP_OK, "OK", b);
    evbuffer_free(b);
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

static void healthz(struct evhttp_request *req, void *arg)
{
    nsc_agent *a = arg;
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    nsc_reg_counts rc;
    nsc_spool_stats sp;
    nsc_reg_counts_get(a->reg, &rc);
    nsc_spool_stats_get(a->spool, &sp);
    evbuffer_add_printf(b, "{\"status\":\"ok\",\"agent_id\":\"%s\",\"host\":\"%s\",\"uptime_ns\":%" PRIu64
                           ",\"processes_alive\":%" PRIu64 ",\"processes_dead\":%" PRIu64
                           ",\"spool_entries\":%" PRIu64 ",\"spool_bytes\":%" PRIu64
                           ",\"spool_refused_entries\":%" PRIu64 ",\"collector_connected\":%s}\n",
                        a->cfg.agent_id, a->cfg.host, nsc_agent_now() - a->start_ns, rc.alive, rc.dead,
                        sp.entries, sp.bytes, sp.refused_entries, collector_connected(a));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, HTTP_OK, "OK", b);
    evbuffer_free(b);
}

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
        !(bs = evhttp_bind_socket_with_handle(a->http, addr, (uint16_t)port))) {
        snprintf(err, 256, "http: cannot listen on %s", a->cfg.http);
        return -1;
    }
    evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET);
    evhttp_set_cb(a->http, "/metrics", metrics, a);
    evhttp_set_cb(a->http, "/healthz", healthz, a);
    return publish(a, bs, err);
}

void nsc_http_stop(nsc_agent *a)
{
    if (a->http)
        evhttp_free(a->http);
    if (a->base)
        event_base_free(a->base);
    a->http = NULL;
    a->base = NULL;
}
