/* harness.c: see harness.h. */
#include "harness.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zmq.h>

static char endpoint[256];
static void *zctx, *sock;
static pthread_t thread;
static atomic_int stopping;
static nsc_recv *rcv;
static _Atomic uint64_t decoded, decoded_states, batches; /* published by the receiver thread */

const char *h_env(void)
{
    static int n;
    snprintf(endpoint, sizeof endpoint, "ipc:///tmp/nsc-test-%d-%d.sock", (int)getpid(), n++);
    setenv("NCCLSCOPE_ENDPOINT", endpoint, 1);
    setenv("NCCLSCOPE_EVENT_MASK", "all", 1);
    return endpoint;
}

static int receive(int flags)
{
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    int n = zmq_msg_recv(&msg, sock, flags);
    if (n >= 0) {
        nsc_recv_batch(rcv, zmq_msg_data(&msg), zmq_msg_size(&msg));
        atomic_store(&decoded, nsc_recv_nevents(rcv));
        atomic_store(&decoded_states, nsc_recv_nstates(rcv));
        atomic_fetch_add(&batches, 1);
    }
    zmq_msg_close(&msg);
    return n;
}

static void *recv_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&stopping))
        receive(0);
    /* The plugin's finalize has handed everything to the kernel, but on a
     * loaded machine our I/O thread may take a while to read it: drain until
     * a quiet period much longer than a scheduling delay. */
    int quiet = 500;
    zmq_setsockopt(sock, ZMQ_RCVTIMEO, &quiet, sizeof quiet);
    while (receive(0) >= 0)
        ;
    return NULL;
}

void h_recv_start(void)
{
    rcv = nsc_recv_new();
    atomic_store(&decoded, 0);
    atomic_store(&decoded_states, 0);
    atomic_store(&batches, 0);
    zctx = zmq_ctx_new();
    sock = zmq_socket(zctx, ZMQ_PULL);
    int timeout = 50;
    zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    if (zmq_bind(sock, endpoint) != 0)
        abort();
    atomic_store(&stopping, 0);
    pthread_create(&thread, NULL, recv_main, NULL);
}

static int wait_for(_Atomic uint64_t *count, uint64_t n)
{
    for (int ms = 0; ms < 30000; ms++) {
        if (atomic_load(count) >= n)
            return 0;
        usleep(1000);
    }
    return -1;
}

int h_recv_wait_events(uint64_t n) { return wait_for(&decoded, n); }

int h_recv_wait_states(uint64_t n) { return wait_for(&decoded_states, n); }
int h_recv_wait_batches(uint64_t n) { return wait_for(&batches, n); }

nsc_recv *h_recv_stop(nsc_recv_totals *t)
{
    atomic_store(&stopping, 1);
    pthread_join(thread, NULL);
    zmq_close(sock);
    zmq_ctx_term(zctx);
    unlink(endpoint + 6);
    nsc_recv_finish(rcv, t);
    nsc_recv *r = rcv;
    rcv = NULL;
    return r;
}

const void *h_load(int version, void **dl)
{
    *dl = dlopen(NSC_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!*dl)
        return NULL;
    char name[32];
    snprintf(name, sizeof name, "ncclProfiler_v%d", version);
    return dlsym(*dl, name);
}

void h_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
    (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

uint64_t h_sum(const uint64_t *v, int n)
{
    uint64_t s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s;
}

int h_in_window(const nsc_event *ev, void *arg)
{
    h_window *w = arg;
    int in = ev->start_ns + 1000 >= w->from && ev->stop_ns <= w->to + 1000 &&
             ev->start_ns <= ev->stop_ns;
    w->in += (uint64_t)in;
    w->out += (uint64_t)!in;
    return 0;
}
