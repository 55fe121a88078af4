/* qstream.c: streamed query responses (see qstream.h). */
#include "qstream.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mono.h"
#include "reply.h"

typedef struct stream {
    nsc_qstreams *set;
    struct stream *next;
    struct evhttp_request *req;  /* ours until ended, even after the client left */
    nsc_qjob job;
    pthread_t thread;
    int wake_fd[2];              /* the worker's nudges to the HTTP thread */
    struct event *wake;
    pthread_mutex_t mu;          /* guards what follows, up to the HTTP thread's own */
    pthread_cond_t drained;
    struct evbuffer *pending;
    int done, cancelled, rc;
    int cutoff;                  /* CUT_*: why the worker gave up on a slow client */
    uint64_t drained_ns;         /* when the HTTP thread last took from pending */
    char err[256];
    int started, in_flight;      /* HTTP thread only */
    int gone;                    /* HTTP thread: the client left, req is detached */
} stream;

struct nsc_qstreams {
    struct event_base *base;
    nsc_store *store;
    nsc_hguard *guard;         /* owns the connections' close callbacks */
    uint64_t stall_ms;         /* a client that takes nothing this long is cut off */
    stream *list;
    unsigned n;
    atomic_uint_fast64_t cut_grow, cut_stall;  /* slow clients cut off, by reason */
};

nsc_qstreams *nsc_qstreams_new(struct event_base *base, nsc_store *st, nsc_hguard *guard, uint64_t stall_ms)
{
    nsc_qstreams *s = calloc(1, sizeof *s);
    if (s) {
        s->base = base;
        s->store = st;
        s->guard = guard;
        s->stall_ms = stall_ms;
    }
    return s;
}

static void nudge(stream *s)
{
    char one = 1;
    /* A full pipe already holds a nudge, so a failed write loses nothing. */
    ssize_t n = write(s->wake_fd[1], &one, 1);
    (void)n;
}

/* ---- worker thread ---- */

enum { CUT_NONE = 0, CUT_GROW, CUT_STALL };

/* Why a worker blocked on a full buffer must give up, or CUT_NONE to wait on.
 * It holds a store reader all the while: growing the map (and so ingest, and
 * every new reader, the HTTP thread's too) waits for it. */
static int must_cut(stream *s, uint64_t now)
{
    if (s->set->store && nsc_store_grow_pending(s->set->store)) {
        atomic_fetch_add(&s->set->cut_grow, 1);
        return CUT_GROW;
    }
    if (now - s->drained_ns >= s->set->stall_ms * 1000000u) {
        atomic_fetch_add(&s->set->cut_stall, 1);
        return CUT_STALL;
    }
    return CUT_NONE;
}

static int worker_write(void *arg, const void *data, size_t len)
{
    stream *s = arg;
    pthread_mutex_lock(&s->mu);
    while (evbuffer_get_length(s->pending) >= NSC_QSTREAM_HIGH && !s->cancelled && !s->cutoff) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += NSC_QSTREAM_POLL_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        if (pthread_cond_timedwait(&s->drained, &s->mu, &until) == ETIMEDOUT)
            s->cutoff = must_cut(s, nsc_mono_ns());
    }
    size_t before = evbuffer_get_length(s->pending);
    int rc = s->cancelled || s->cutoff || evbuffer_add(s->pending, data, len);
    pthread_mutex_unlock(&s->mu);
    if (!rc && before < NSC_QSTREAM_CHUNK && before + len >= NSC_QSTREAM_CHUNK)
        nudge(s);
    return rc;
}

static void *worker(void *arg)
{
    stream *s = arg;
    nsc_store_reader *rd = NULL;
    char err[256] = "";
    int rc = s->job.own_reads ? 0 : nsc_store_read_begin(s->set->store, &rd);
    if (rc) {
        snprintf(err, sizeof err, "%s", nsc_store_strerror(rc));
        rc = NSC_QUERY_ESTORE;
    } else {
        rc = s->job.run(s->job.arg, rd, worker_write, s, err, sizeof err);
        if (rd)
            nsc_store_read_end(rd);
    }
    if (s->cutoff == CUT_GROW)
        snprintf(err, sizeof err, "the store's map must grow and the client reads too slowly");
    else if (s->cutoff == CUT_STALL)
        snprintf(err, sizeof err, "the client took nothing for %" PRIu64 " ms", s->set->stall_ms);
    if (s->cutoff)
        fprintf(stderr, "ncclscope-collector: %s stream cut off: %s\n", s->job.name, err);
    pthread_mutex_lock(&s->mu);
    s->rc = rc;
    memcpy(s->err, err, sizeof err);
    s->done = 1;
    pthread_mutex_unlock(&s->mu);
    nudge(s);
    return NULL;
}

/* ---- HTTP thread ---- */

static void stream_free(stream *s)
{
    if (s->wake)
        event_free(s->wake);
    close(s->wake_fd[0]);
    close(s->wake_fd[1]);
    if (s->pending)
        evbuffer_free(s->pending);
    pthread_cond_destroy(&s->drained);
    pthread_mutex_destroy(&s->mu);
    if (s->job.free)
        s->job.free(s->job.arg);
    free(s);
}

/* The worker has finished: join it and forget the stream. */
static void finish(stream *s)
{
    pthread_join(s->thread, NULL);
    for (stream **p = &s->set->list; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    s->set->n--;
    stream_free(s);
}

static const char *reason(int code)
{
    return code == 404 ? "Not Found" : code == 400 ? "Bad Request" : "Internal Server Error";
}

/* The request is answered from here on; the connection may be reused. */
static void let_go(stream *s)
{
    if (!s->gone)
        nsc_hguard_on_close(s->set->guard, evhttp_request_get_connection(s->req), NULL, NULL);
}

/* End the reply; a detached request (client gone) is freed by this. */
static void end_reply(stream *s)
{
    let_go(s);
    evhttp_send_reply_end(s->req);
}

static void pump(stream *s);

static void chunk_sent(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    stream *s = arg;
    s->in_flight = 0;
    pump(s);
}

/* Start the chunked reply once a chunk's worth is waiting (under s->mu). */
static void start_reply(stream *s)
{
    evhttp_add_header(evhttp_request_get_output_headers(s->req), "Content-Type",
                      s->job.content_type);
    evhttp_send_reply_start(s->req, HTTP_OK, "OK");
    s->started = 1;
}

/* A result that ended before a chunk's worth: one whole reply. */
static void reply_whole(stream *s)
{
    let_go(s);
    if (s->rc) {
        int code = nsc_query_http_status(s->rc);
        nsc_http_json_error(s->req, code, reason(code), s->err);
    } else {
        evhttp_add_header(evhttp_request_get_output_headers(s->req), "Content-Type",
                          s->job.content_type);
        evhttp_send_reply(s->req, HTTP_OK, "OK", s->pending);
    }
}

/* Move what waits to the connection, one chunk in flight at a time. */
static void pump(stream *s)
{
    struct evbuffer *chunk = NULL;
    pthread_mutex_lock(&s->mu);
    int done = s->done;
    size_t n = evbuffer_get_length(s->pending);
    if (!s->gone && !s->started && done) {
        reply_whole(s);
        pthread_mutex_unlock(&s->mu);
        finish(s);
        return;
    }
    if (!s->gone && !s->started && n >= NSC_QSTREAM_CHUNK)
        start_reply(s);
    if (!s->gone && s->started && !s->in_flight && n && (chunk = evbuffer_new()) &&
        evbuffer_add_buffer(chunk, s->pending) == 0) {
        s->drained_ns = nsc_mono_ns();
        pthread_cond_signal(&s->drained);
    }
    pthread_mutex_unlock(&s->mu);
    if (chunk) {
        if (evbuffer_get_length(chunk)) {
            s->in_flight = 1;
            evhttp_send_reply_chunk_with_cb(s->req, chunk, chunk_sent, s);
        }
        evbuffer_free(chunk);
        if (s->in_flight)
            return;
    }
    /* A client gone mid-chunk never sees that chunk sent: done is enough. */
    if (done && (s->gone || (!s->in_flight && !evbuffer_get_length(s->pending)))) {
        end_reply(s);
        finish(s);
    }
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    pump(arg);
}

/* The client went away: stop the query. libevent detaches the unfinished
 * request from the connection and leaves it to us to end (which frees it). */
static void on_close(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    stream *s = arg;
    s->gone = 1;
    pthread_mutex_lock(&s->mu);
    s->cancelled = 1;
    pthread_cond_signal(&s->drained);
    pthread_mutex_unlock(&s->mu);
    /* A worker that had already finished sends no more nudges: finish the
     * stream from the event loop, outside libevent's close handling. */
    nudge(s);
}

static stream *stream_new(nsc_qstreams *set, struct evhttp_request *req, const nsc_qjob *job)
{
    stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->set = set;
    s->req = req;
    s->job = *job;
    s->wake_fd[0] = s->wake_fd[1] = -1;
    s->drained_ns = nsc_mono_ns();
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->drained, &attr);
    pthread_condattr_destroy(&attr);
    if (pipe2(s->wake_fd, O_NONBLOCK | O_CLOEXEC) || !(s->pending = evbuffer_new()) ||
        !(s->wake = event_new(set->base, s->wake_fd[0], EV_READ | EV_PERSIST, on_wake, s)) ||
        event_add(s->wake, NULL)) {
        s->job.free = NULL;  /* the caller still owns its arg */
        stream_free(s);
        return NULL;
    }
    return s;
}

void nsc_qstream_start_job(nsc_qstreams *set, struct evhttp_request *req, const nsc_qjob *job)
{
    if (set->n >= NSC_QSTREAM_MAX) {
        job->free(job->arg);
        nsc_http_json_error(req, 503, "Service Unavailable", "too many queries running; try again");
        return;
    }
    stream *s = stream_new(set, req, job);
    if (!s || pthread_create(&s->thread, NULL, worker, s)) {
        if (s)
            stream_free(s);
        else
            job->free(job->arg);
        nsc_http_json_error(req, 500, "Internal Server Error", "cannot start the query");
        return;
    }
    nsc_hguard_on_close(set->guard, evhttp_request_get_connection(req), on_close, s);
    s->next = set->list;
    set->list = s;
    set->n++;
}

static int query_run(void *arg, nsc_store_reader *rd, nsc_query_write_fn fn, void *fn_arg, char *err, size_t errcap)
{
    return nsc_query_run(arg, rd, fn, fn_arg, err, errcap);
}

static void query_free(void *arg) { nsc_query_free(arg); }

void nsc_qstream_start(nsc_qstreams *set, struct evhttp_request *req, nsc_query *q)
{
    nsc_qjob job = {nsc_query_name(q), nsc_query_content_type(q), 0, query_run, query_free, q};
    nsc_qstream_start_job(set, req, &job);
}

void nsc_qstreams_free(nsc_qstreams *set)
{
    if (!set)
        return;
    while (set->list) {
        stream *s = set->list;
        pthread_mutex_lock(&s->mu);
        s->cancelled = 1;
        pthread_cond_signal(&s->drained);
        pthread_mutex_unlock(&s->mu);
        if (s->started || s->gone) {
            end_reply(s);
        } else {
            let_go(s);
            nsc_http_json_error(s->req, 503, "Service Unavailable", "the collector is stopping");
        }
        finish(s);
    }
    free(set);
}

void nsc_qstreams_render(nsc_qstreams *set, struct evbuffer *out)
{
    evbuffer_add_printf(out,
                        "# HELP ncclscope_collector_query_streams Query responses being streamed\n"
                        "# TYPE ncclscope_collector_query_streams gauge\n"
                        "ncclscope_collector_query_streams %u\n"
                        "# HELP ncclscope_collector_query_cutoffs_total Streamed responses cut off because the client read too slowly\n"
                        "# TYPE ncclscope_collector_query_cutoffs_total counter\n"
                        "ncclscope_collector_query_cutoffs_total{reason=\"map_growth\"} %" PRIu64 "\n"
                        "ncclscope_collector_query_cutoffs_total{reason=\"stalled\"} %" PRIu64 "\n",
                        set->n, (uint64_t)atomic_load(&set->cut_grow), (uint64_t)atomic_load(&set->cut_stall));
}
