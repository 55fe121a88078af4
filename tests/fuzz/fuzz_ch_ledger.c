/* fuzz_ch_ledger.c: libFuzzer target for the reader of the ClickHouse
 * ledger_recs table's record columns (nsc_ch_ledger_read: what a scoped
 * query reads back in RowBinary, from a server anyone with write access to
 * the table can fill). Records are read one after another, as chread.c
 * reads them between rows' other columns; a record read must lie within the
 * input, and reading the same bytes again must give the same record. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chledger.h"

#define ROOM 4  /* edges kept; a record with more is read with none */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t at = 0;
    while (at < size) {
        nsc_ledger_rec r, again;
        nsc_ledger_edge e[ROOM], e2[ROOM];
        size_t used = nsc_ch_ledger_read(data + at, size - at, &r, e, ROOM);
        if (used == 0)
            break;
        if (used > size - at || nsc_ch_ledger_read(data + at, used, &again, e2, ROOM) != used ||
            (r.edges != NULL) != (again.edges != NULL) || (r.edges && r.edges != e) ||
            (r.edges && memcmp(e, e2, r.nedges * sizeof *e) != 0))
            abort();
        r.edges = again.edges = NULL;
        if (memcmp(&r, &again, sizeof r) != 0)
            abort();
        at += used;
    }
    return 0;
}
