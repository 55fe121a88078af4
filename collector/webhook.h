/* webhook.h: the collector's verdict webhook (docs/alerts.md, "Webhook").
 *
 * Owns a thread, its libcurl handle and a bounded queue of JSON bodies: each
 * body handed over is POSTed to cfg.webhook_url, retried on failure (no
 * answer, or a status other than 2xx) after webhook_backoff_ms, doubling at
 * each retry, webhook_retries times at most. Handing a body over never waits:
 * with webhook_queue bodies waiting the new one is dropped and counted. A
 * POST is bounded by webhook_timeout_ms, and stopping aborts the one in
 * progress, so a receiver that is down or slow costs neither the caller nor
 * shutdown. Counters: ncclscope_collector_webhook_{posts,failures,retries_exhausted,
 * dropped}_total and the queue's length.
 */
#ifndef NCCLSCOPE_COLLECTOR_WEBHOOK_H
#define NCCLSCOPE_COLLECTOR_WEBHOOK_H

#include <event2/buffer.h>

#include "config.h"

typedef struct nsc_webhook nsc_webhook;

/* Start the thread (an empty webhook_url: none, *out NULL). 0 or -1. */
int nsc_webhook_start(const nsc_coll_cfg *cfg, nsc_webhook **out);
/* Queue body (malloc'd; taken in every case: freed when dropped). w NULL:
 * freed at once. */
void nsc_webhook_post(nsc_webhook *w, char *body);
/* The webhook's families (nothing for NULL). */
void nsc_webhook_render(nsc_webhook *w, struct evbuffer *b);
/* Stop (aborting a POST in progress), join and free; what waits is dropped. */
void nsc_webhook_stop(nsc_webhook *w);

#endif
