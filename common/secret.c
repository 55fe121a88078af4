/* secret.c: constant-time secret comparison (see secret.h). */
#include "secret.h"

#include <stddef.h>
#include <string.h>

int nsc_secret_equal(const char *given, const char *expected)
{
    size_t gl = strlen(given), el = strlen(expected);
    /* every byte of the expected secret is read whatever the given one holds;
     * volatile keeps the compiler from ending the loop at the first difference */
    volatile unsigned char diff = gl != el;
    for (size_t i = 0; i < el; i++)
        diff |= (unsigned char)(expected[i] ^ (i < gl ? given[i] : 0));
    return diff == 0;
}
