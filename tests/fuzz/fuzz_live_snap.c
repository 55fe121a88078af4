/* fuzz_live_snap.c: libFuzzer target for the live state's snapshot decoder
 * (a collector reads the other collectors' snapshots from ClickHouse, where
 * anyone with write access can put bytes). Whatever decodes must be usable
 * as the collector uses it: its status written, merged into another state,
 * and snapshotted again into bytes that decode. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "live.h"

#define NOW (1000ull * 1000000000ull)
#define WALL (1700000000ull * 1000000000ull)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nsc_live *l, *again;
    const char *why;
    if (nsc_live_from_snapshot(data, size, NULL, NOW, WALL, &l, &why)) {
        if (!why || !why[0])
            abort();
        return 0;
    }
    FILE *devnull = fopen("/dev/null", "w");
    nsc_live *m = nsc_live_new(NULL);
    uint8_t *snap;
    size_t len;
    if (!devnull || !m || nsc_live_status_json(l, NOW + 1, devnull) || nsc_live_merge(m, l) ||
        nsc_live_merge(m, l) || nsc_live_summary_json(m, NOW + 1, devnull) ||
        nsc_live_snapshot(m, NOW, WALL, &snap, &len))
        abort();
    if (nsc_live_from_snapshot(snap, len, NULL, NOW, WALL, &again, &why))
        abort();
    nsc_live_free(again);
    free(snap);
    nsc_live_free(m);
    nsc_live_free(l);
    fclose(devnull);
    return 0;
}
