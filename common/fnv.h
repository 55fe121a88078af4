/* fnv.h: FNV-1a, 64 bits: the one stable hash (the same on every build and
 * host) for what must land the same way everywhere: a ClickHouse row's
 * shard, an agent's pick among a name's collectors, a trace's track ids. */
#ifndef NSC_FNV_H
#define NSC_FNV_H

#include <stddef.h>
#include <stdint.h>

#define NSC_FNV1A_BASIS 0xcbf29ce484222325ull
#define NSC_FNV1A_PRIME 0x100000001b3ull

/* h continued over the n bytes at p. */
static inline uint64_t nsc_fnv1a(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const uint8_t *)p)[i]) * NSC_FNV1A_PRIME;
    return h;
}

#endif
