/* paint.c: colour at a terminal only (see paint.h). */
#include "paint.h"

#include <stdlib.h>
#include <unistd.h>

int nsc_paint_wanted(void)
{
    const char *no = getenv("NO_COLOR");
    return isatty(STDOUT_FILENO) && !(no && *no);
}

const char *nsc_paint_on(int on, nsc_paint p)
{
    static const char *const esc[] = {"", "\033[1;31m", "\033[33m", "\033[32m"};
    return on ? esc[p] : "";
}

const char *nsc_paint_off(int on) { return on ? "\033[0m" : ""; }
