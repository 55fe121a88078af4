/* order.h: the three-way comparison of sort comparators, in one place.
 *
 * NSC_CMP(a, b) is -1, 0 or 1 as a is below, equal to or above b, for any
 * arithmetic type. NSC_ORDER(k1, k2, ...) takes NSC_CMP results, most
 * significant first, and is the first that is not 0: the order by k1, ties
 * broken by k2, and so on. nsc_cmp_u64 and nsc_cmp_double order numbers
 * for qsort, nsc_cmp_str C strings (an array of const char *) byte by byte. */
#ifndef NSC_ORDER_H
#define NSC_ORDER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NSC_CMP(a, b) (((a) > (b)) - ((a) < (b)))

static inline int nsc_order_first(const int *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (keys[i])
            return keys[i];
    return 0;
}

#define NSC_ORDER(...) \
    nsc_order_first((const int[]){__VA_ARGS__}, sizeof((const int[]){__VA_ARGS__}) / sizeof(int))

/* qsort comparator of uint64_t, ascending. */
static inline int nsc_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return NSC_CMP(x, y);
}

/* qsort comparator of doubles, ascending. */
static inline int nsc_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return NSC_CMP(x, y);
}

/* qsort comparator of C strings (elements are const char *), by strcmp. */
static inline int nsc_cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

#endif
