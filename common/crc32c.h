/* crc32c.h: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of an agent-to-collector batch (a2c.h): computed when the batch is
 * encoded for the spool, checked by the agent before it sends the batch and by
 * the collector before it stores it. Software, slice-by-8: the same result on
 * every host; a few GB/s, far above what one agent forwards.
 */
#ifndef NCCLSCOPE_CRC32C_H
#define NCCLSCOPE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of the n bytes at p, continued from crc (0 to start):
 * nsc_crc32c(nsc_crc32c(0, a, na), b, nb) is the CRC of a followed by b. */
uint32_t nsc_crc32c(uint32_t crc, const void *p, size_t n);

#endif
