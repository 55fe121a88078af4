/* qjson.h: members of a query's JSON answer for the Criterion query tests, each
 * asserted to be there with its type. */
#ifndef NCCLSCOPE_TEST_QJSON_H
#define NCCLSCOPE_TEST_QJSON_H

#include <criterion/criterion.h>
#include <stdint.h>

#include "json.h"

static inline uint64_t qj_u64(const nsc_json *o, const char *key)
{
    uint64_t v;
    cr_assert_eq(nsc_json_u64(nsc_json_get(o, key), &v), 0, "no %s", key);
    return v;
}

static inline int64_t qj_i64(const nsc_json *o, const char *key)
{
    int64_t v;
    cr_assert_eq(nsc_json_i64(nsc_json_get(o, key), &v), 0, "no %s", key);
    return v;
}

static inline const char *qj_str(const nsc_json *o, const char *key)
{
    const char *s = nsc_json_str(nsc_json_get(o, key));
    cr_assert(s, "no string %s", key);
    return s;
}

#endif
