/* test_secret.c: the constant-time secret comparison (common/secret.c)
 * answers exactly as strcmp(...) == 0 would, differences at either end,
 * prefixes and the empty secret included. */
#include <criterion/criterion.h>

#include "secret.h"

Test(secret, equal_only_when_identical)
{
    static const struct {
        const char *given, *expected;
        int equal;
    } cases[] = {
        {"s3cret-token", "s3cret-token", 1}, {"x3cret-token", "s3cret-token", 0},
        {"s3cret-tokex", "s3cret-token", 0}, {"s3cret-toke", "s3cret-token", 0},
        {"s3cret-token!", "s3cret-token", 0}, {"", "s3cret-token", 0},
        {"s3cret-token", "", 0},              {"", "", 1},
        {"s3cret\x80token", "s3cret-token", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(nsc_secret_equal(cases[i].given, cases[i].expected), cases[i].equal, "case %zu", i);
}
