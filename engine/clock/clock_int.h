/* clock_int.h: what the clock model's own files share (engine/clock/clock.c,
 * clockser.c); nothing outside them includes it. */
#ifndef NCCLSCOPE_CLOCK_INT_H
#define NCCLSCOPE_CLOCK_INT_H

#include "clock.h"

/* Judge one point as a new probe (clock.c), first moved past the last point
 * kept or held when it is not after it: points are placed at the exchange's
 * midpoint, and a slow exchange can put one past its successor's. Also how a
 * serialized model's open-window probe (versions 1 and 2) is taken back. */
int nsc_clock_accept_ordered(nsc_clock_model *m, nsc_clock_point p);

#endif
