/* fuzz_seeds.c: writes the wire fuzzer's seed corpus (valid batches) into the
 * directory given as argv[1], so no binary seeds live in the repository. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "wire_samples.h"

static uint8_t buf[1 << 16];

static int write_seed(const char *dir, const char *name, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || len == 0 || fwrite(buf, 1, len, f) != len) {
        fprintf(stderr, "fuzz_seeds: cannot write %s\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    return fclose(f);
}

/* A batch of a few records of one kind: small seeds mutate well. */
static size_t small_batch(unsigned variant)
{
    nsc_batch_hdr h;
    nsc_enc e;
    sample_hdr(&h);
    h.seq = variant;
    if (nsc_enc_begin(&e, buf, sizeof buf, &h) != NSC_WIRE_OK)
        return 0;
    for (unsigned i = 0; i < 3; i++) {
        nsc_event ev;
        nsc_state_rec st;
        sample_event(&ev, (variant * 3 + i) % NSC_T_COUNT, 10 + i, &h);
        sample_state(&st, (variant * 7 + i) % NSC_S_COUNT, 10 + i, &h);
        if (nsc_enc_event(&e, &ev) != NSC_WIRE_OK || nsc_enc_state(&e, &st) != NSC_WIRE_OK)
            return 0;
    }
    return nsc_enc_finish(&e);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds CORPUS_DIR\n");
        return 2;
    }
    if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) {
        perror(argv[1]);
        return 1;
    }
    int rc = write_seed(argv[1], "seed-all-records", sample_batch(buf, sizeof buf));
    for (unsigned v = 0; v < 6 && rc == 0; v++) {
        char name[32];
        snprintf(name, sizeof name, "seed-small-%u", v);
        rc = write_seed(argv[1], name, small_batch(v));
    }
    return rc == 0 ? 0 : 1;
}
