/* test_registry.c: the agent's process registry (agent/registry.c) with a
 * real child process: first sight, its exit seen through its pidfd, its own
 * batches that were still queued then (the same incarnation, not a new
 * one), and a reused pid (a new incarnation). */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry.h"

static int deaths;
static void on_death(void *arg, nsc_reg_proc *p)
{
    (void)arg;
    cr_assert_eq(p->reason, NSC_A2C_REASON_EXITED);
    deaths++;
}

static nsc_batch_hdr hdr_of(pid_t pid, uint64_t seq, int final)
{
    nsc_batch_hdr h;
    memset(&h, 0, sizeof h);
    h.seq = seq;
    h.final = (uint8_t)final;
    h.proc.pid = (uint32_t)pid;
    strcpy(h.proc.host, "h1");
    strcpy(h.proc.job, "job1");
    return h;
}

static void expect_counts(nsc_registry *r, uint64_t alive, uint64_t dead, uint64_t started)
{
    nsc_reg_counts c;
    nsc_reg_counts_get(r, &c);
    cr_assert_eq(c.alive, alive);
    cr_assert_eq(c.dead, dead);
    cr_assert_eq(c.started_total, started);
}

Test(registry, late_batches_of_an_exited_process_are_not_a_new_one)
{
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    nsc_registry *r = nsc_reg_new();
    cr_assert(r);
    unsigned news;
    nsc_batch_hdr h = hdr_of(child, 0, 0);
    nsc_reg_proc *p = nsc_reg_get(r, &h, 1, &news);
    cr_assert(p);
    cr_assert_eq(news, NSC_REG_STARTED);
    h = hdr_of(child, 1, 0);
    cr_assert_eq(nsc_reg_get(r, &h, 2, &news), p);
    cr_assert_eq(news, 0);
    expect_counts(r, 1, 0, 1);

    kill(child, SIGKILL);
    cr_assert_eq(waitpid(child, NULL, 0), child);
    nsc_reg_check(r, 3, UINT64_MAX / 2, on_death, NULL);
    cr_assert_eq(deaths, 1);
    expect_counts(r, 0, 1, 1);

    /* queued before the exit was seen: its final batch finishes it, still dead */
    h = hdr_of(child, 2, 1);
    cr_assert_eq(nsc_reg_get(r, &h, 4, &news), p);
    cr_assert_eq(news, NSC_REG_FINISHED);
    cr_assert_eq(p->alive, 0);
    expect_counts(r, 0, 1, 1);
    nsc_reg_check(r, 5, UINT64_MAX / 2, on_death, NULL);
    cr_assert_eq(deaths, 1, "a dead process dies once");

    /* the pid reused: a new stream from seq 0 is a new incarnation */
    h = hdr_of(child, 0, 0);
    nsc_reg_proc *q = nsc_reg_get(r, &h, 6, &news);
    cr_assert(q && q != p);
    cr_assert_eq(news, NSC_REG_STARTED);
    expect_counts(r, 1, 1, 2);
    nsc_reg_free(r);
}
