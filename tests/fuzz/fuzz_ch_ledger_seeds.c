/* fuzz_ch_ledger_seeds.c DIR: ledger_recs record values into DIR, as seeds
 * for fuzz_ch_ledger: a zero-valued record with 0, 1 and 3 edges, in the
 * reader's layout (chledger.h: the record's fields, then an Array per edge
 * field), each checked to read back whole. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "chledger.h"
#include "event_fields.h"

#define REC_SIZE(a, kind, m, doc) +sizeof(NSC_CTYPE_##kind)
#define EDGE_ARRAY(a, kind, m, doc) row[len++] = (uint8_t)n, len += n * sizeof(NSC_CTYPE_##kind);

int main(int argc, char **argv)
{
    static uint8_t row[4096];
    static const size_t counts[] = {0, 1, 3};
    nsc_ledger_rec r;
    nsc_ledger_edge e[4];
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_ch_ledger_seeds DIR\n");
        return 2;
    }
    if (mkdir(argv[1], 0777) != 0 && errno != EEXIST)
        return perror(argv[1]), 1;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        size_t n = counts[i], len = 0 NSC_FIELDS_LEDGER(REC_SIZE, _);
        memset(row, 0, sizeof row);
        NSC_FIELDS_LEDGER_EDGE(EDGE_ARRAY, _)
        if (nsc_ch_ledger_read(row, len, &r, e, 4) != len) {
            fprintf(stderr, "fuzz_ch_ledger_seeds: a record of %zu edges does not read back\n", n);
            return 1;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/edges%zu", argv[1], n);
        FILE *f = fopen(path, "wb");
        int ok = f && fwrite(row, 1, len, f) == len;
        if ((f && fclose(f)) || !ok)
            return perror(path), 1;
    }
    return 0;
}
