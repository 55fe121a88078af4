/* fuzz_ch_event.c: libFuzzer target for the reader of the ClickHouse events
 * table's rows (nsc_ch_event_read: what a query reads back in RowBinary, from a
 * server anyone with write access to the table can fill). Rows are read one
 * after another as chread.c does; a row read must lie within the input, and
 * reading the same bytes again must give the same event. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chevents.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t at = 0;
    while (at < size) {
        nsc_event e, again;
        size_t used = nsc_ch_event_read(data + at, size - at, &e);
        if (used == 0)
            break;
        if (used > size - at || nsc_ch_event_read(data + at, used, &again) != used ||
            memcmp(&e, &again, sizeof e) != 0)
            abort();
        at += used;
    }
    return 0;
}
