/* grow.h: the growing arrays of common/ and the components that use it: room
 * for one more element, the capacity doubling from a first size. */
#ifndef NSC_GROW_H
#define NSC_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Make element `count` of the array *arrp (any T **, elements of `elem`
 * bytes, `*cap` of them) exist: 0, or -1 when out of memory (the array and
 * *cap unchanged). */
static inline int nsc_grow(void *arrp, size_t count, size_t *cap, size_t elem, size_t first)
{
    if (count < *cap)
        return 0;
    size_t ncap = *cap ? 2 * *cap : first;
    if (ncap > SIZE_MAX / elem)
        return -1;
    void *old;
    memcpy(&old, arrp, sizeof old);
    void *p = realloc(old, ncap * elem);
    if (!p)
        return -1;
    memcpy(arrp, &p, sizeof p);
    *cap = ncap;
    return 0;
}

#endif
