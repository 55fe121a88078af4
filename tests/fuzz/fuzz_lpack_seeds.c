/* fuzz_lpack_seeds.c: writes ledger values (ledger_pack.h) for the fuzzer's
 * corpus: records with and without edges, in-flight ones, unknown times.
 *   fuzz_lpack_seeds CORPUS_DIR */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_lpack.h"

static int write_value(const char *dir, int i, const nsc_ledger_rec *const *p, size_t n)
{
    nsc_ledger_key k = FUZZ_LPACK_KEY;
    uint8_t buf[1 << 16];
    char path[4096];
    if (nsc_lpack_bound(p, n) > sizeof buf)
        return -1;
    size_t len = nsc_lpack_encode(&k, p, n, buf);
    snprintf(path, sizeof path, "%s/seed-lpack-%d", dir, i);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(buf, 1, len, f) == len;
    return (f && fclose(f) == 0 && ok) ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_lpack_seeds CORPUS_DIR\n");
        return 2;
    }
    mkdir(argv[1], 0755);
    nsc_ledger_key k = FUZZ_LPACK_KEY;
    static nsc_ledger_edge edges[8][3];
    nsc_ledger_rec r[8];
    const nsc_ledger_rec *p[8];
    for (int i = 0; i < 8; i++) {
        uint64_t t = 5000000000ull + (uint64_t)i * 1000000;
        r[i] = (nsc_ledger_rec){.comm_id = k.comm, .seq = k.first + (uint64_t)i * 2,
                                .rank = k.rank, .func = 1, .datatype = 2, .count = 1024, .bytes = 4096,
                                .root = -1, .peer = -1, .nchannels = 2, .api_ns = i == 5 ? 0 : t,
                                .enqueue_ns = t + 800, .launch_ns = t + 3000, .done_ns = i == 6 ? 0 : t + 90000,
                                .gpu_start_ns = t + 4000, .gpu_end_ns = t + 85000, .gpu_err_ns = 900,
                                .flags = i == 6 ? NSC_LEDGER_INFLIGHT : 0};
        for (uint32_t e = 0; e < (uint32_t)(i % 4); e++)
            edges[i][e] = (nsc_ledger_edge){.peer = e, .channel = (uint8_t)e, .is_send = e & 1, .last_step = 7,
                                            .steps = 8, .bytes = 512, .step_sum_ns = 7000, .wait_gpu_ns = 30};
        r[i].nedges = (uint32_t)(i % 4 < 3 ? i % 4 : 3);
        r[i].edges = edges[i];
        p[i] = &r[i];
    }
    int rc = 0;
    for (int n = 0; n <= 8 && !rc; n += 4)
        rc = write_value(argv[1], n, p, (size_t)n);
    return rc ? 1 : 0;
}
