/* test_grow.c: grow.h, the one growth rule of the growing arrays. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "grow.h"

Test(grow, doubles_from_the_first_size)
{
    int *a = NULL;
    size_t cap = 0;
    cr_assert_eq(nsc_grow(&a, 0, &cap, sizeof *a, 4), 0);
    cr_assert_eq(cap, 4);
    for (size_t i = 0; i < 4; i++)
        a[i] = (int)i;
    cr_assert_eq(nsc_grow(&a, 3, &cap, sizeof *a, 4), 0);
    cr_assert_eq(cap, 4, "room already there: unchanged");
    cr_assert_eq(nsc_grow(&a, 4, &cap, sizeof *a, 4), 0);
    cr_assert_eq(cap, 8);
    cr_assert_eq(a[3], 3, "the elements kept");
    cr_assert_eq(nsc_grow_to(&a, 33, &cap, sizeof *a, 4), 0);
    cr_assert_eq(cap, 64, "doubled until it holds 33");
    free(a);
}

Test(grow, zeroed_tail)
{
    unsigned char *a = NULL;
    size_t cap = 0;
    cr_assert_eq(nsc_grow_zeroed(&a, 3, &cap, 1, 16), 0);
    cr_assert_eq(cap, 16);
    a[0] = 7;
    cr_assert_eq(nsc_grow_zeroed(&a, 100, &cap, 1, 16), 0);
    cr_assert_eq(cap, 128);
    cr_assert_eq(a[0], 7);
    for (size_t i = 16; i < cap; i++)
        cr_assert_eq(a[i], 0, "element %zu", i);
    free(a);
}

Test(grow, overflow_refused_unchanged)
{
    int *a = NULL;
    size_t cap = 0;
    cr_assert_eq(nsc_grow(&a, 0, &cap, sizeof *a, 8), 0);
    int *before = a;
    cr_assert_eq(nsc_grow_to(&a, SIZE_MAX / 2, &cap, sizeof *a, 8), -1);
    cr_assert_eq(a, before);
    cr_assert_eq(cap, 8);
    free(a);
}
