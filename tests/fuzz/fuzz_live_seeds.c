/* fuzz_live_seeds.c: writes fuzz_live_snap's seeds into a directory: the
 * snapshots of a few live states (communicators with ranks in flight and
 * done, processes alive, dead and finished, agents), so no binary seeds
 * live in the repository:  fuzz_live_seeds DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "live.h"
#include "livefeed.h"

#define S 1000000000ull

/* Process 10+rank's Colls [0, last] of a 2-rank AllGather, the last one
 * in flight. */
static int colls(nsc_live *l, int rank, uint64_t last, uint64_t now)
{
    nsc_test_feed f = {.agent = "agent", .job = "fuzz", .host = "h", .func = "AllGather",
                       .pid = 10 + (uint32_t)rank, .rank = rank, .nranks = 2, .comm = 0xf00d};
    return nsc_test_feed_colls(l, &f, 0, last, 1, now);
}

static int write_seed(const char *dir, int n, const nsc_live *l)
{
    uint8_t *snap;
    size_t len;
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%d", dir, n);
    FILE *f = NULL;
    int rc = nsc_live_snapshot(l, 20 * S, 1700000000ull * S, &snap, &len) || !(f = fopen(path, "wb")) ||
             fwrite(snap, 1, len, f) != len;
    if (f)
        rc = fclose(f) || rc;
    if (rc)
        fprintf(stderr, "fuzz_live_seeds: cannot write %s\n", path);
    free(snap);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (mkdir(argv[1], 0755) && access(argv[1], W_OK))) {
        fprintf(stderr, "usage: fuzz_live_seeds DIR\n");
        return 2;
    }
    nsc_live *l = nsc_live_new(NULL);
    int rc = !l || write_seed(argv[1], 0, l) || colls(l, 0, 3, 2 * S) || write_seed(argv[1], 1, l) ||
             colls(l, 1, 5, 3 * S);
    nsc_live_tick(l, 4 * S);
    nsc_a2c_life died = {.event = NSC_A2C_DIED, .reason = NSC_A2C_REASON_SILENT, .pid = 11, .job = "fuzz"};
    nsc_a2c_life fin = {.event = NSC_A2C_FINISHED, .pid = 10, .job = "fuzz"};
    rc = rc || nsc_live_life(l, "agent", "h", &died, 5 * S) || nsc_live_life(l, "agent", "h", &fin, 6 * S) ||
         write_seed(argv[1], 2, l);
    nsc_live_free(l);
    return rc;
}
