/* receiver.c: ncclscope-test-receiver, a stand-in for the node agent in tests.
 *
 *   ncclscope-test-receiver ENDPOINT[,ENDPOINT...] SUMMARY.json [--ready FILE]
 *
 * Binds a ZeroMQ PULL socket on every ENDPOINT (one per simulated node;
 * creating an ipc socket's directory),
 * decodes every batch with the common codec until SIGTERM or SIGINT, drains
 * what is still queued, and writes the JSON summary of what arrived (recv.h).
 * --ready FILE is created once the socket is bound.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#include "recv.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* mkdir -p of the directory holding an ipc:// socket. */
static void make_ipc_dir(const char *endpoint)
{
    if (strncmp(endpoint, "ipc://", 6) != 0)
        return;
    char path[512];
    snprintf(path, sizeof path, "%s", endpoint + 6);
    char *slash = strrchr(path, '/');
    if (!slash)
        return;
    *slash = '\0';
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    mkdir(path, 0755);
}

static int receive(void *sock, nsc_recv *r, int flags)
{
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    int n = zmq_msg_recv(&msg, sock, flags);
    if (n >= 0)
        nsc_recv_batch(r, zmq_msg_data(&msg), zmq_msg_size(&msg));
    zmq_msg_close(&msg);
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 3 && !(argc == 5 && strcmp(argv[3], "--ready") == 0)) {
        fprintf(stderr, "usage: %s ENDPOINT[,ENDPOINT...] SUMMARY.json [--ready FILE]\n",
                argv[0]);
        return 2;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    void *zctx = zmq_ctx_new();
    void *sock = zmq_socket(zctx, ZMQ_PULL);
    int64_t maxmsg = NSC_WIRE_MAX_MSG;
    int timeout = 50, hwm = 100000;
    zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    for (char *ep = strtok(argv[1], ","); ep; ep = strtok(NULL, ",")) {
        make_ipc_dir(ep);
        if (zmq_bind(sock, ep) != 0) {
            fprintf(stderr, "receiver: bind %s: %s\n", ep, zmq_strerror(errno));
            return 1;
        }
    }
    if (argc == 5) {
        FILE *f = fopen(argv[4], "w");
        if (f)
            fclose(f);
    }
    nsc_recv *r = nsc_recv_new();
    while (!stop)
        receive(sock, r, 0);
    while (receive(sock, r, 0) >= 0) /* what is queued, until 50 ms of quiet */
        ;
    nsc_recv_totals t;
    nsc_recv_finish(r, &t);
    FILE *out = fopen(argv[2], "w");
    if (!out) {
        fprintf(stderr, "receiver: cannot write %s\n", argv[2]);
        return 1;
    }
    nsc_recv_json(r, &t, out);
    fclose(out);
    nsc_recv_free(r);
    zmq_close(sock);
    zmq_ctx_term(zctx);
    return 0;
}
