/* fuzz_flat.c: libFuzzer target for the CLI's shallow-object scanner (cli/flat.h).
 *
 * Any input must be declined or read without a crash or a sanitizer report;
 * what is read must be what the generic JSON reader reads from the same
 * bytes, node for node (tests/cli/flat_check.h). The scratch is kept across
 * inputs, as the NDJSON reader keeps it across lines.
 */
#include <stdint.h>
#include <stdlib.h>

#include "flat_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static nsc_flat f;
    if (flat_check(&f, (const char *)data, size) < 0)
        abort();
    return 0;
}
