/* grow.h: the growing arrays of common/ and the components that use it: room
 * for more elements, the capacity doubling from a first size. The only place
 * that decides how an array grows; callers keep a size_t capacity beside it. */
#ifndef NSC_GROW_H
#define NSC_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Make the array *arrp (any T **, elements of `elem` bytes, `*cap` of them)
 * hold at least `need` elements, doubling the capacity from `first`: 0, or -1
 * when out of memory (the array and *cap unchanged). New elements are not
 * initialised. */
static inline int nsc_grow_to(void *arrp, size_t need, size_t *cap, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : first ? first : 1;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return -1;
        ncap *= 2;
    }
    if (elem && ncap > SIZE_MAX / elem)
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

/* Make element `count` of the array exist (room for one more after `count`). */
static inline int nsc_grow(void *arrp, size_t count, size_t *cap, size_t elem, size_t first)
{
    return nsc_grow_to(arrp, count + 1, cap, elem, first);
}

/* As nsc_grow_to, the new elements zeroed: tables indexed by an id. */
static inline int nsc_grow_zeroed(void *arrp, size_t need, size_t *cap, size_t elem, size_t first)
{
    size_t old = *cap;
    if (nsc_grow_to(arrp, need, cap, elem, first))
        return -1;
    char *base;
    memcpy(&base, arrp, sizeof base);
    if (*cap > old)
        memset(base + old * elem, 0, (*cap - old) * elem);
    return 0;
}

#endif
