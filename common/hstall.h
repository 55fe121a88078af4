/* hstall.h: how long the thread that serves a daemon's HTTP could not
 * answer, whatever the machine's load.
 *
 * Owns two gauges of that thread, agent and collector alike: its costliest
 * turn in thread CPU time (work done in libevent's own callbacks counts too;
 * waiting in poll spends none) and its longest stretch of work timed by wall
 * time less what it queued for a CPU meanwhile (schedstat), so that blocking
 * (a sleep, a lock, an fsync) counts and a loaded machine does not. Together
 * they say whether a client stalled /healthz, where a client's own wait for
 * the answer grows with the load. Only the measured thread touches it.
 */
#ifndef NSC_HSTALL_H
#define NSC_HSTALL_H

#include <stdint.h>

struct evbuffer;

typedef struct nsc_hstall {
    uint64_t turn_cpu_max_ns;  /* the costliest turn so far */
    uint64_t stretch_max_ns;   /* the longest stretch so far, less its wait for a CPU */
    int schedstat;             /* the thread's /proc schedstat; -1: none */
} nsc_hstall;

/* Where a turn or a stretch began. */
typedef struct nsc_hstall_mark {
    uint64_t wall_ns, queued_ns, cpu_ns;
} nsc_hstall_mark;

/* On the thread to measure, before its loop; nsc_hstall_close after it. */
void nsc_hstall_open(nsc_hstall *s);
void nsc_hstall_close(nsc_hstall *s);

nsc_hstall_mark nsc_hstall_begin(const nsc_hstall *s);
/* A stretch of work (a request, a tick) ends. */
void nsc_hstall_stretch(nsc_hstall *s, nsc_hstall_mark m);
/* A turn of the loop ends: its thread CPU time since m. */
void nsc_hstall_turn(nsc_hstall *s, nsc_hstall_mark m);

/* PREFIX_http_turn_cpu_max_seconds and PREFIX_http_callback_max_seconds. */
void nsc_hstall_render(const nsc_hstall *s, const char *prefix, struct evbuffer *b);

#endif
