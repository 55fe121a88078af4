/* fnv.h: FNV-1a, 64 bits: the one stable hash (the same on every build and
 * host) for what must land the same way everywhere: a ClickHouse row's
 * shard, an agent's pick among a name's collectors, the collector that
 * announces a job's verdicts, a trace's track ids. */
#ifndef NSC_FNV_H
#define NSC_FNV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NSC_FNV1A_BASIS 0xcbf29ce484222325ull
#define NSC_FNV1A_PRIME 0x100000001b3ull

/* h continued over the n bytes at p. */
static inline uint64_t nsc_fnv1a(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const uint8_t *)p)[i]) * NSC_FNV1A_PRIME;
    return h;
}

/* The rendezvous weight of choice (its first n bytes) for key: FNV-1a of
 * key, a byte no key holds and the choice, its bits mixed at the end
 * (FNV's last bytes barely reach the high bits, and weights are compared
 * whole). Every party computing it for the same key ranks the choices
 * alike, with no word between them. */
static inline uint64_t nsc_fnv_rendezvous(const char *key, const char *choice, size_t n)
{
    uint64_t h = nsc_fnv1a(NSC_FNV1A_BASIS, key, strlen(key));
    h = nsc_fnv1a(h, "\xff", 1);
    h = nsc_fnv1a(h, choice, n);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

#endif
