/* fuzz_lsave.c: libFuzzer target for the ledger builder's saved state (what a
 * restarted agent reads back from its spool, agent/lsave.h). Whatever is
 * taken back must save again, and that saved state be taken back and saved
 * to the same bytes.
 *
 * Built with -DNSC_FUZZ_SEEDS it is instead the seed writer: fuzz_lsave_seeds
 * DIR writes the state of a process with a collective half folded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lbuild.h"

static void drop(void *arg, nsc_reg_proc *p, const nsc_ledger_rec *r)
{
    (void)arg, (void)p, (void)r;
}

typedef struct one {
    void *buf;
    size_t len;
} one;

static int keep(void *arg, uint64_t host, uint32_t pid, void *buf, size_t len)
{
    (void)host, (void)pid;
    one *o = arg;
    free(o->buf);
    *o = (one){buf, len};
    return 0;
}

static nsc_reg_proc *proc(nsc_registry *reg)
{
    nsc_batch_hdr h = {.proc = {.pid = 7, .host = "h", .job = "j"}};
    unsigned news;
    nsc_reg_proc *p = nsc_reg_get(reg, &h, 1, &news);
    if (!p)
        abort();
    return p;
}

#ifndef NSC_FUZZ_SEEDS
/* The state restored from buf saved again (o->buf NULL: refused). */
static void round_trip(const void *buf, size_t len, one *o)
{
    nsc_registry *reg = nsc_reg_new();
    nsc_lbuild *lb = nsc_lbuild_new(1000, 1000, 64, drop, NULL);
    if (!reg || !lb)
        abort();
    *o = (one){NULL, 0};
    if (nsc_lbuild_restore(lb, proc(reg), buf, len) == 0 && nsc_lbuild_save(lb, keep, o) != 0)
        abort();
    nsc_lbuild_free(lb);
    nsc_reg_free(reg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one a, b;
    round_trip(data, size, &a);
    if (!a.buf)
        return 0;
    round_trip(a.buf, a.len, &b);
    if (!b.buf || b.len != a.len || memcmp(a.buf, b.buf, a.len) != 0)
        abort();
    free(a.buf);
    free(b.buf);
    return 0;
}
#else
int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_lsave_seeds CORPUS_DIR\n");
        return 2;
    }
    if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) {
        perror(argv[1]);
        return 1;
    }
    nsc_registry *reg = nsc_reg_new();
    nsc_lbuild *lb = nsc_lbuild_new(1000, 1000, 64, drop, NULL);
    nsc_reg_proc *p = proc(reg);
    nsc_state_rec st = {.id = 21, .ts_ns = 5000, .arg = 4096, .state = NSC_S_PROXY_STEP_SEND_WAIT};
    nsc_event coll = {.id = 10, .start_ns = 1000, .stop_ns = 2000, .type = NSC_T_COLL};
    nsc_event kch = {.id = 11, .parent = 10, .start_ns = 3000, .stop_ns = 9000, .type = NSC_T_KERNEL_CH};
    kch.d.kernel_ch.ptimer_start = 50000, kch.d.kernel_ch.ptimer_stop = 56000, kch.d.kernel_ch.ptimer_stop_ns = 9000;
    nsc_event step = {.id = 21, .parent = 20, .start_ns = 4000, .stop_ns = 8000, .type = NSC_T_PROXY_STEP};
    nsc_lbuild_state(lb, p, &st);
    nsc_lbuild_event(lb, p, &coll, 1);
    nsc_lbuild_event(lb, p, &kch, 1);
    nsc_lbuild_state(lb, p, &(nsc_state_rec){.id = 22, .ts_ns = 6000, .state = NSC_S_PROXY_STEP_RECV_WAIT});
    nsc_lbuild_event(lb, p, &step, 1);
    one o = {NULL, 0};
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-lsave", argv[1]);
    FILE *f = nsc_lbuild_save(lb, keep, &o) == 0 && o.buf ? fopen(path, "wb") : NULL;
    int ok = f && fwrite(o.buf, 1, o.len, f) == o.len;
    if (f && fclose(f) != 0)
        ok = 0;
    free(o.buf);
    nsc_lbuild_free(lb);
    nsc_reg_free(reg);
    return ok ? 0 : 1;
}
#endif
