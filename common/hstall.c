/* hstall.c: the HTTP thread's stall gauges (see hstall.h). */
#include "hstall.h"

#include <event2/buffer.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "mono.h"
#include "prom.h"

void nsc_hstall_open(nsc_hstall *s)
{
    s->schedstat = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
}

void nsc_hstall_close(nsc_hstall *s)
{
    if (s->schedstat >= 0)
        close(s->schedstat);
    s->schedstat = -1;
}

/* How long the thread has waited for a CPU (schedstat's run-queue wait;
 * 0 when unread): load stretches a callback by that much and no more. */
static uint64_t queued_ns(const nsc_hstall *s)
{
    char text[96];
    ssize_t n = s->schedstat < 0 ? -1 : pread(s->schedstat, text, sizeof text - 1, 0);
    unsigned long long ran, waited;
    if (n <= 0)
        return 0;
    text[n] = 0;
    return sscanf(text, "%llu %llu", &ran, &waited) == 2 ? waited : 0;
}

nsc_hstall_mark nsc_hstall_begin(const nsc_hstall *s)
{
    return (nsc_hstall_mark){nsc_mono_ns(), queued_ns(s), nsc_thread_cpu_ns()};
}

void nsc_hstall_stretch(nsc_hstall *s, nsc_hstall_mark m)
{
    uint64_t wall = nsc_mono_ns() - m.wall_ns;
    if (wall <= s->stretch_max_ns)  /* less the wait it is lower still: spare the read */
        return;
    int64_t took = (int64_t)(wall - (queued_ns(s) - m.queued_ns));  /* the clocks may differ by a few ns */
    if (took > 0 && (uint64_t)took > s->stretch_max_ns)
        s->stretch_max_ns = (uint64_t)took;
}

void nsc_hstall_turn(nsc_hstall *s, nsc_hstall_mark m)
{
    uint64_t spent = nsc_thread_cpu_ns() - m.cpu_ns;
    if (spent > s->turn_cpu_max_ns)
        s->turn_cpu_max_ns = spent;
}

void nsc_hstall_render(const nsc_hstall *s, const char *prefix, struct evbuffer *b)
{
    char name[128];
    snprintf(name, sizeof name, "%s_http_turn_cpu_max_seconds", prefix);
    nsc_prom_head(b, name, "gauge", "Most CPU time the thread serving HTTP spent in one turn of its loop, since start");
    evbuffer_add_printf(b, "%s %.6f\n", name, s->turn_cpu_max_ns / 1e9);
    snprintf(name, sizeof name, "%s_http_callback_max_seconds", prefix);
    nsc_prom_head(b, name, "gauge",
                  "Longest request, tick or turn of work on the thread serving HTTP, less its wait for a CPU, since start");
    evbuffer_add_printf(b, "%s %.6f\n", name, s->stretch_max_ns / 1e9);
}
