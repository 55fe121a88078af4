/* fuzz_ch_event_seeds.c DIR: events-table rows of every event type into DIR,
 * as seeds for fuzz_ch_event. The row's layout is the reader's (chevents.c):
 * a seed is a zero-valued row of a type that it accepts, with
 * its fields Array as long as the type's fields, and with the origin's. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "chevents.h"

#define HEAD_MAX 512
#define FIELDS_MAX 64

static int write_seed(const char *dir, int type, int n, const uint8_t *row, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/type%d_n%d", dir, type, n);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(row, 1, len, f) == len;
    if (f && fclose(f))
        ok = 0;
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    static uint8_t row[1 + HEAD_MAX + 1 + 8 * FIELDS_MAX];
    nsc_event e;
    int seeds = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_ch_event_seeds DIR\n");
        return 2;
    }
    if (mkdir(argv[1], 0777) != 0 && errno != EEXIST)
        return perror(argv[1]), 1;
    for (int t = 0; t < NSC_T_COUNT; t++)
        for (int n = 0; n < FIELDS_MAX; n++)
            for (size_t head = 0; head < HEAD_MAX; head++) {
                size_t len = 1 + head + 1 + 8 * (size_t)n;
                memset(row, 0, len);
                row[0] = (uint8_t)t;
                row[1 + head] = (uint8_t)n;
                if (nsc_ch_event_read(row, len, &e) != len)
                    continue;
                if (write_seed(argv[1], t, n, row, len))
                    return perror(argv[1]), 1;
                seeds++;
                break;
            }
    printf("fuzz_ch_event_seeds: %d rows\n", seeds);
    return seeds >= NSC_T_COUNT ? 0 : 1;
}
