/* fuzz_uprobe.c: libFuzzer target for the clock probe datagram (uprobe.h),
 * which the collector's UDP clock port and the agent's probe socket read
 * from the network. Whatever decodes, as a request or an answer, encodes
 * back to the very bytes it came as: the format has one spelling, and a
 * request's answer is never larger than it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uprobe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t kinds[] = {NSC_UPROBE_REQUEST, NSC_UPROBE_ANSWER};
    for (size_t i = 0; i < sizeof kinds; i++) {
        nsc_uprobe p;
        uint8_t out[NSC_UPROBE_LEN];
        if (nsc_uprobe_decode(data, size, kinds[i], &p) != NSC_UPROBE_OK)
            continue;
        nsc_uprobe_encode(&p, out);
        if (size != sizeof out || memcmp(out, data, size) != 0)
            abort();
    }
    return 0;
}
