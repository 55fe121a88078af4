/* test_crc32c.c: CRC-32C (common/crc32c.c) against the published check
 * values (the CRC catalogue's "123456789", RFC 3720 B.4's iSCSI vectors), the
 * same result when the input comes in pieces of every split, and a detected
 * change for every single-bit flip of a message. */
#include <criterion/criterion.h>
#include <string.h>

#include "crc32c.h"

Test(crc32c, known_vectors)
{
    uint8_t buf[48];
    cr_assert_eq(nsc_crc32c(0, "123456789", 9), 0xE3069283u);
    cr_assert_eq(nsc_crc32c(0, "", 0), 0);
    memset(buf, 0, 32);
    cr_assert_eq(nsc_crc32c(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, 32);
    cr_assert_eq(nsc_crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    cr_assert_eq(nsc_crc32c(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    cr_assert_eq(nsc_crc32c(0, buf, 32), 0x113FDB5Cu);
    static const uint8_t iscsi_read[48] = {
        0x01, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x14, 0, 0, 0, 0, 0, 0x04, 0,
        0, 0, 0, 0x14, 0, 0, 0, 0x18, 0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0};
    cr_assert_eq(nsc_crc32c(0, iscsi_read, sizeof iscsi_read), 0xD9963A56u);
}

Test(crc32c, pieces_continue)
{
    uint8_t msg[77];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 131 + 7);
    uint32_t whole = nsc_crc32c(0, msg, sizeof msg);
    for (size_t cut = 0; cut <= sizeof msg; cut++)
        cr_assert_eq(nsc_crc32c(nsc_crc32c(0, msg, cut), msg + cut, sizeof msg - cut), whole, "cut at %zu", cut);
}

Test(crc32c, every_bit_flip_detected)
{
    uint8_t msg[300];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 37 + 11);
    uint32_t whole = nsc_crc32c(0, msg, sizeof msg);
    for (size_t i = 0; i < sizeof msg * 8; i++) {
        msg[i / 8] ^= (uint8_t)(1u << i % 8);
        cr_assert_neq(nsc_crc32c(0, msg, sizeof msg), whole, "bit %zu", i);
        msg[i / 8] ^= (uint8_t)(1u << i % 8);
    }
}
