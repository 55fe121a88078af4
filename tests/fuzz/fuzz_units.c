/* fuzz_units.c: libFuzzer target for the times a person types into the CLI
 * (cli/units.h: --t0, --since, ...): a length of time and a UTC time.
 *
 * Any input must be parsed or refused without a crash or a sanitizer
 * report; a UTC time that parses must format and parse back to itself, to
 * the microsecond the format keeps (common/utc.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"
#include "utc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[256], back[64];
    if (size >= sizeof text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    uint64_t ns;
    int64_t utc, again;
    (void)nsc_parse_span(text, &ns);
    if (nsc_parse_utc(text, &utc) == 0 && utc >= 0) {
        nsc_utc_iso(utc, back, sizeof back);
        if (nsc_parse_utc(back, &again) != 0 || again != utc / 1000 * 1000)
            abort();
    }
    return 0;
}
