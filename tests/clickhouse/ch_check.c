/* ch_check.c: nsc-ch-check EMU.json COUNTS.tsv | nsc-ch-check EMU.json --emitted
 *
 * Compares what the emulator emitted (its --summary) with what ClickHouse
 * holds for the job: COUNTS.tsv is the answer of
 *   SELECT type, count() FROM DB.events FINAL WHERE job = ... GROUP BY type
 * in TabSeparated (one "TYPE<tab>COUNT" line per event type stored). Every
 * type must hold exactly the events the profiled ranks stopped, their own and
 * the PXN events they stopped for others: none lost (an acknowledged batch
 * missing) and none twice (a batch inserted again and not folded).
 * Prints each mismatch; exit 0 when there is none, 1 otherwise, 2 on bad use.
 * With --emitted it prints the number of events emitted and exits 0.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "check_util.h"
#include "event.h"

static int read_counts(const char *path, uint64_t stored[NSC_T_COUNT])
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "ch-check: cannot open %s\n", path);
        return -1;
    }
    unsigned t;
    uint64_t n;
    int rc = 0;
    while (rc == 0 && fscanf(f, "%u %" SCNu64, &t, &n) == 2) {
        if (t >= NSC_T_COUNT) {
            fprintf(stderr, "ch-check: %s: event type %u out of range\n", path, t);
            rc = -1;
        } else {
            stored[t] = n;
        }
    }
    if (rc == 0 && !feof(f)) {
        fprintf(stderr, "ch-check: %s: not TYPE COUNT lines\n", path);
        rc = -1;
    }
    fclose(f);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: nsc-ch-check EMU.json COUNTS.tsv|--emitted\n");
        return 2;
    }
    nsc_json_doc doc;
    uint64_t emitted[NSC_T_COUNT], stored[NSC_T_COUNT] = {0}, total_e = 0, total_s = 0;
    if (e2e_load_json("ch-check", argv[1], &doc))
        return 2;
    e2e_emitted_by_type(nsc_json_root(&doc), emitted);
    nsc_json_free(&doc);
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        total_e += emitted[t];
    if (strcmp(argv[2], "--emitted") == 0) {
        printf("%" PRIu64 "\n", total_e);
        return 0;
    }
    if (read_counts(argv[2], stored))
        return 2;
    int failures = 0;
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        total_s += stored[t];
        if (emitted[t] != stored[t]) {
            fprintf(stderr, "ch-check: %s: emitted %" PRIu64 ", in ClickHouse %" PRIu64 "\n", nsc_type_name(t),
                    emitted[t], stored[t]);
            failures++;
        }
    }
    if (total_e == 0) {
        fprintf(stderr, "ch-check: the summary has no event\n");
        failures++;
    }
    printf("ch-check: %" PRIu64 " events emitted, %" PRIu64 " in ClickHouse\n", total_e, total_s);
    return failures ? 1 : 0;
}
