/* webhook.c: the verdict webhook's queue and thread (see webhook.h). */
#include "webhook.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <curl/curl.h>

#include "prom.h"

/* A retry waits at most this long, however many came before it. */
#define BACKOFF_CAP_MS 60000u

struct nsc_webhook {
    const nsc_coll_cfg *cfg;
    pthread_t thread;
    pthread_mutex_t mu;  /* guards q, head, len and stop */
    pthread_cond_t cv;   /* a body queued, or stop (on CLOCK_MONOTONIC) */
    char **q;            /* a ring of cfg->webhook_queue bodies */
    size_t head, len;
    int stop;
    atomic_int aborting; /* stop, as curl's progress callback reads it */
    atomic_uint_fast64_t posts, failures, exhausted, dropped, queued;
};

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p, (void)arg;
    return size * n;
}

/* Non-zero aborts the transfer: stopping never waits for a receiver. */
static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    return atomic_load(&((nsc_webhook *)arg)->aborting);
}

static CURL *new_handle(nsc_webhook *w, struct curl_slist *headers)
{
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_URL, w->cfg->webhook_url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)w->cfg->webhook_timeout_ms);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, w);
    return h;
}

/* The next body, or NULL once stopped. */
static char *take(nsc_webhook *w)
{
    char *body = NULL;
    pthread_mutex_lock(&w->mu);
    while (!w->len && !w->stop)
        pthread_cond_wait(&w->cv, &w->mu);
    if (!w->stop) {
        body = w->q[w->head];
        w->head = (w->head + 1) % w->cfg->webhook_queue;
        w->len--;
        atomic_store(&w->queued, w->len);
    }
    pthread_mutex_unlock(&w->mu);
    return body;
}

/* Wait ms, or less if stopped; 1 if stopped. */
static int backoff(nsc_webhook *w, uint64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L)
        until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&w->mu);
    int rc = 0;
    while (!w->stop && rc == 0)
        rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
    int stopped = w->stop;
    pthread_mutex_unlock(&w->mu);
    return stopped;
}

static int post_once(CURL *h, const char *body)
{
    long status = 0;
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    return rc == CURLE_OK && status >= 200 && status < 300 ? 0 : -1;
}

/* POST body until a 2xx, webhook_retries retries at most. */
static void deliver(nsc_webhook *w, CURL *h, const char *body)
{
    uint64_t wait_ms = w->cfg->webhook_backoff_ms < BACKOFF_CAP_MS ? w->cfg->webhook_backoff_ms : BACKOFF_CAP_MS;
    for (uint64_t attempt = 0;; attempt++) {
        if (post_once(h, body) == 0) {
            atomic_fetch_add(&w->posts, 1);
            return;
        }
        atomic_fetch_add(&w->failures, 1);
        if (attempt == w->cfg->webhook_retries) {
            atomic_fetch_add(&w->exhausted, 1);
            fprintf(stderr, "ncclscope-collector: webhook: a verdict not delivered after %llu retries\n",
                    (unsigned long long)attempt);
            return;
        }
        if (backoff(w, wait_ms))
            return;
        wait_ms = wait_ms * 2 > BACKOFF_CAP_MS ? BACKOFF_CAP_MS : wait_ms * 2;
    }
}

static void *run(void *arg)
{
    nsc_webhook *w = arg;
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    CURL *h = headers ? new_handle(w, headers) : NULL;
    if (!h)
        fprintf(stderr, "ncclscope-collector: webhook: libcurl: cannot start; verdicts are dropped\n");
    for (char *body; (body = take(w)); free(body)) {
        if (h)
            deliver(w, h, body);
        else
            atomic_fetch_add(&w->dropped, 1);
    }
    if (h)
        curl_easy_cleanup(h);
    curl_slist_free_all(headers);
    return NULL;
}

int nsc_webhook_start(const nsc_coll_cfg *cfg, nsc_webhook **out)
{
    *out = NULL;
    if (!cfg->webhook_url[0])
        return 0;
    nsc_webhook *w = calloc(1, sizeof *w);
    if (!w || !(w->q = calloc(cfg->webhook_queue, sizeof *w->q)) || curl_global_init(CURL_GLOBAL_DEFAULT)) {
        if (w)
            free(w->q);
        free(w);
        return -1;
    }
    w->cfg = cfg;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->mu, NULL);
    if (pthread_create(&w->thread, NULL, run, w)) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        curl_global_cleanup();
        free(w->q);
        free(w);
        return -1;
    }
    *out = w;
    return 0;
}

void nsc_webhook_post(nsc_webhook *w, char *body)
{
    if (!w) {
        free(body);
        return;
    }
    pthread_mutex_lock(&w->mu);
    int full = w->len == w->cfg->webhook_queue;
    if (!full) {
        w->q[(w->head + w->len) % w->cfg->webhook_queue] = body;
        w->len++;
        atomic_store(&w->queued, w->len);
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    if (full) {
        atomic_fetch_add(&w->dropped, 1);
        free(body);
    }
}

void nsc_webhook_render(nsc_webhook *w, struct evbuffer *b)
{
    if (!w)
        return;
    nsc_prom_u64(b, "ncclscope_collector_webhook_posts_total", "counter", "Verdicts the webhook delivered (a 2xx answer)",
                 atomic_load(&w->posts));
    nsc_prom_u64(b, "ncclscope_collector_webhook_failures_total", "counter",
                 "Webhook POSTs that failed (no answer in webhook_timeout_ms, or not 2xx)", atomic_load(&w->failures));
    nsc_prom_u64(b, "ncclscope_collector_webhook_retries_exhausted_total", "counter",
                 "Verdicts given up after webhook_retries retries", atomic_load(&w->exhausted));
    nsc_prom_u64(b, "ncclscope_collector_webhook_dropped_total", "counter",
                 "Verdicts dropped because webhook_queue were waiting", atomic_load(&w->dropped));
    nsc_prom_u64(b, "ncclscope_collector_webhook_queue", "gauge", "Verdicts waiting for the webhook",
                 atomic_load(&w->queued));
}

void nsc_webhook_stop(nsc_webhook *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    atomic_store(&w->aborting, 1);
    pthread_join(w->thread, NULL);
    for (size_t i = 0; i < w->len; i++)
        free(w->q[(w->head + i) % w->cfg->webhook_queue]);
    free(w->q);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    curl_global_cleanup();
    free(w);
}
