/* Unit tests for the agent-to-collector codec: round trips of a batch (with
 * wire sections and ledger batches that decode again), an ack, a rejection, a probe and a UDP offer, the
 * malformed corpus, each case asserting its exact error, and a batch's CRC:
 * every changed byte is found, by the decoder and by nsc_a2c_batch_check. */
#include <criterion/criterion.h>
#include <string.h>

#include "a2c.h"
#include "crc32c.h"
#include "wire_samples.h"

static uint8_t sect_buf[2][1024], ledger_buf[2][4096], msg[1 << 16];

/* A small valid wire batch for process pid with one Coll event. */
static uint32_t make_section(uint8_t *buf, uint32_t pid, uint64_t id)
{
    nsc_enc e;
    nsc_batch_hdr h = {.version = NSC_WIRE_VERSION, .seq = 7, .base_ns = 1000, .proc = {.pid = pid}};
    strcpy(h.proc.host, "node0");
    cr_assert_eq(nsc_enc_begin(&e, buf, 1024, &h), 0);
    nsc_event ev = {.id = id, .start_ns = 1500, .stop_ns = 1700, .tid = pid, .type = NSC_T_COLL, .rank = 3};
    cr_assert_eq(nsc_enc_event(&e, &ev), 0);
    return (uint32_t)nsc_enc_finish(&e);
}

static const nsc_a2c_progress progress[2] = {
    {.comm_id = 0xabcdef0123456789ull, .seq = 41, .rank = 3, .func = "AllReduce"},
    {.comm_id = 17, .seq = 0, .rank = -1, .func = "Send"},
};

/* The sample ledger batch of process pid, with its first n records. */
static nsc_a2c_section make_ledger(uint8_t *buf, uint32_t pid, uint32_t n)
{
    nsc_ledger_batch b = sample_ledger();
    b.pid = pid;
    b.nrecs = n;
    cr_assert_leq(nsc_ledger_bound(&b), sizeof ledger_buf[0]);
    return (nsc_a2c_section){buf, (uint32_t)nsc_ledger_encode(&b, buf)};
}

/* A batch with two sections, three life records, one alias and two ledger
 * batches. */
static size_t make_batch(void)
{
    static nsc_a2c_section secs[2], ledgers[2];
    static nsc_a2c_life life[3];
    static nsc_a2c_alias alias = {.proxy_pid = 11, .origin_pid = 10, .proxy_id = 5, .new_id = (1ull << 63) | 9};
    secs[0] = (nsc_a2c_section){sect_buf[0], make_section(sect_buf[0], 10, 100)};
    secs[1] = (nsc_a2c_section){sect_buf[1], make_section(sect_buf[1], 11, 200)};
    ledgers[0] = make_ledger(ledger_buf[0], 10, 3);
    ledgers[1] = make_ledger(ledger_buf[1], 11, 1);
    life[0] = (nsc_a2c_life){.event = NSC_A2C_STARTED, .pid = 10, .ts_ns = 123, .job = "job1"};
    life[1] = (nsc_a2c_life){.event = NSC_A2C_DIED, .reason = NSC_A2C_REASON_EXITED, .pid = 11,
                             .ts_ns = UINT64_MAX, .last_batch_seq = 99, .job = "job1", .host = "gpu-17",
                             .nprogress = 2, .progress = progress};
    life[2] = (nsc_a2c_life){.event = NSC_A2C_FINISHED, .pid = 10, .ts_ns = 7, .job = "job1"};
    nsc_a2c_batch b = {.agent = "agent-a", .host = "node0", .epoch = UINT64_MAX - 1, .seq = 1ull << 40, .sent_ns = 5,
                       .nsections = 2, .nlife = 3, .naliases = 1, .sections = secs, .life = life,
                       .aliases = &alias, .nledgers = 2, .ledgers = ledgers};
    size_t bound = nsc_a2c_batch_bound(&b);
    cr_assert_leq(bound, sizeof msg);
    size_t n = nsc_a2c_encode_batch(&b, msg);
    cr_assert_leq(n, bound);
    return n;
}

Test(a2c, batch_round_trip)
{
    size_t n = make_batch();
    nsc_a2c_batch d;
    cr_assert_eq(nsc_a2c_kind(msg, n), NSC_A2C_BATCH);
    cr_assert_eq(nsc_a2c_decode_batch(msg, n, NULL, &d), 0);
    cr_assert_str_eq(d.agent, "agent-a");
    cr_assert_str_eq(d.host, "node0");
    cr_assert_eq(d.epoch, UINT64_MAX - 1);
    cr_assert_eq(d.seq, 1ull << 40);
    cr_assert_eq(d.sent_ns, 5);
    cr_assert_eq(d.nsections, 2);
    for (unsigned i = 0; i < 2; i++) {
        nsc_batch wb;
        cr_assert_eq(nsc_batch_decode(d.sections[i].data, d.sections[i].len, NULL, &wb), 0);
        cr_assert_eq(wb.hdr.proc.pid, 10 + i);
        cr_assert_eq(wb.nevents, 1);
        cr_assert_eq(wb.events[0].id, 100 + 100 * i);
        nsc_batch_release(&wb);
    }
    cr_assert_eq(d.nlife, 3);
    cr_assert_eq(d.life[0].event, NSC_A2C_STARTED);
    cr_assert_eq(d.life[2].event, NSC_A2C_FINISHED);
    cr_assert_eq(d.life[2].ts_ns, 7);
    cr_assert_eq(d.life[0].nprogress, 0);
    cr_assert_str_eq(d.life[0].job, "job1");
    cr_assert_eq(d.life[1].reason, NSC_A2C_REASON_EXITED);
    cr_assert_str_eq(d.life[1].host, "gpu-17");
    cr_assert_str_eq(d.life[0].host, "");
    cr_assert_eq(d.life[1].ts_ns, UINT64_MAX);
    cr_assert_eq(d.life[1].last_batch_seq, 99);
    cr_assert_eq(d.life[1].nprogress, 2);
    cr_assert(memcmp(d.life[1].progress, progress, sizeof progress) == 0);
    cr_assert_eq(d.naliases, 1);
    cr_assert_eq(d.aliases[0].new_id, (1ull << 63) | 9);
    cr_assert_eq(d.aliases[0].proxy_pid, 11);
    cr_assert_eq(d.nledgers, 2);
    for (unsigned i = 0; i < 2; i++) {
        nsc_ledger_batch lb;
        cr_assert_eq(nsc_ledger_decode(d.ledgers[i].data, d.ledgers[i].len, NULL, &lb), 0);
        cr_assert_eq(lb.pid, 10 + i);
        cr_assert_eq(lb.nrecs, i ? 1 : 3);
        cr_assert_eq(lb.recs[0].seq, 10);
        nsc_ledger_release(&lb);
    }
    nsc_a2c_batch_release(&d);
}

Test(a2c, empty_batch_round_trip)
{
    nsc_a2c_batch b = {.agent = "a", .seq = 0}, d;
    size_t n = nsc_a2c_encode_batch(&b, msg);
    cr_assert_eq(nsc_a2c_decode_batch(msg, n, NULL, &d), 0);
    cr_assert_eq(d.nsections + d.nlife + d.naliases + d.nledgers, 0);
    nsc_a2c_batch_release(&d);
}

/* A batch from an older agent's spool: version 1, no epoch; it reads as epoch 0. */
Test(a2c, version_1_batch_is_epoch_0)
{
    static const uint8_t v1[] = "\x99\x01\x01\xa1" "a\x07\xa2" "h0\x05\x90\x90\x90";
    nsc_a2c_batch d;
    cr_assert_eq(nsc_a2c_decode_batch(v1, sizeof v1 - 1, NULL, &d), 0);
    cr_assert_str_eq(d.agent, "a");
    cr_assert_str_eq(d.host, "h0");
    cr_assert_eq(d.epoch, 0);
    cr_assert_eq(d.seq, 7);
    cr_assert_eq(d.sent_ns, 5);
    nsc_a2c_batch_release(&d);
    static const uint8_t v2[] = "\x9a\x01\x02\xa1" "a\x09\x07\xa2" "h0\x05\x90\x90\x90";
    cr_assert_eq(nsc_a2c_decode_batch(v2, sizeof v2 - 1, NULL, &d), 0);
    cr_assert_eq(d.epoch, 9);
    cr_assert_eq(d.seq, 7);
    nsc_a2c_batch_release(&d);
}

/* A batch from an agent before the ledger: version 3, CRC, no ledgers. */
Test(a2c, version_3_batch_still_decodes)
{
    static const uint8_t head[] = "\x9b\x01\x03\xa1" "a\x09\x07\xa2" "h0\x05\x90\x90\x90";
    uint8_t v3[sizeof head + 4];
    memcpy(v3, head, sizeof head - 1);
    uint32_t crc = nsc_crc32c(0, v3, sizeof head - 1);
    uint8_t *p = v3 + sizeof head - 1;
    *p++ = 0xce;
    for (int shift = 24; shift >= 0; shift -= 8)
        *p++ = (uint8_t)(crc >> shift);
    nsc_a2c_batch d;
    cr_assert_eq(nsc_a2c_decode_batch(v3, sizeof v3, NULL, &d), 0);
    cr_assert_eq(d.epoch, 9);
    cr_assert_eq(d.seq, 7);
    cr_assert_eq(d.crc, crc);
    cr_assert_eq(d.nledgers, 0);
    nsc_a2c_batch_release(&d);
    cr_assert_eq(nsc_a2c_batch_check(v3, sizeof v3), 0);
    v3[6] ^= 1;
    cr_assert_eq(nsc_a2c_batch_check(v3, sizeof v3), NSC_WIRE_BAD_CHECKSUM);
}

Test(a2c, ack_and_probe_round_trip)
{
    uint8_t buf[NSC_A2C_SMALL_MAX];
    nsc_a2c_ack a = {.agent = "a23456789012345678901234567890123456789012345678901234567890123",
                     .seq = UINT64_MAX, .credit = UINT32_MAX}, ad;
    size_t n = nsc_a2c_encode_ack(&a, buf);
    cr_assert_eq(nsc_a2c_kind(buf, n), NSC_A2C_ACK);
    cr_assert_eq(nsc_a2c_decode_ack(buf, n, &ad), 0);
    cr_assert_str_eq(ad.agent, a.agent);
    cr_assert_eq(ad.seq, a.seq);
    cr_assert_eq(ad.credit, a.credit);
    nsc_a2c_probe p, pd;
    memset(&p, 0, sizeof p);
    p.kind = NSC_A2C_PROBE;
    strcpy(p.agent, a.agent);
    memset(p.host, 'h', sizeof p.host - 1);
    p.id = 3, p.t1 = 1, p.t2 = UINT64_MAX, p.t3 = 1ull << 33;
    n = nsc_a2c_encode_probe(&p, buf);
    cr_assert_leq(n, NSC_A2C_SMALL_MAX);
    cr_assert_eq(nsc_a2c_kind(buf, n), NSC_A2C_PROBE);
    cr_assert_eq(nsc_a2c_decode_probe(buf, n, &pd), 0);
    cr_assert(memcmp(&p, &pd, sizeof p) == 0);
    /* a probe is not an ack */
    cr_assert_eq(nsc_a2c_decode_ack(buf, n, &ad), NSC_WIRE_BAD_RECORD);
    /* the completed sample: same layout, its own kind, t4 filled */
    p.kind = NSC_A2C_SAMPLE;
    p.t4 = UINT64_MAX;
    n = nsc_a2c_encode_probe(&p, buf);
    cr_assert_leq(n, NSC_A2C_SMALL_MAX);
    cr_assert_eq(nsc_a2c_kind(buf, n), NSC_A2C_SAMPLE);
    cr_assert_eq(nsc_a2c_decode_probe(buf, n, &pd), 0);
    cr_assert(memcmp(&p, &pd, sizeof p) == 0);
    /* acks and probes stay version 1 */
    nsc_a2c_ack v2;
    cr_assert_eq(nsc_a2c_decode_ack("\x95\x02\x02\xa1" "a\x00\x00", 7, &v2), NSC_WIRE_BAD_VERSION);
    /* an ack is neither */
    n = nsc_a2c_encode_ack(&a, buf);
    cr_assert_eq(nsc_a2c_decode_probe(buf, n, &pd), NSC_WIRE_BAD_RECORD);
}

static int decode_rc(const uint8_t *m, size_t n, const nsc_dec_limits *lim)
{
    nsc_a2c_batch d, zero;
    memset(&zero, 0, sizeof zero);
    int rc = nsc_a2c_decode_batch(m, n, lim, &d);
    if (rc != 0)
        cr_assert(memcmp(&d, &zero, sizeof d) == 0, "output not empty after error %d", rc);
    nsc_a2c_batch_release(&d);
    return rc;
}

Test(a2c, every_prefix_is_truncated)
{
    size_t n = make_batch();
    cr_assert_eq(decode_rc(msg, 0, NULL), NSC_WIRE_EMPTY);
    for (size_t i = 1; i < n; i++)
        cr_assert_eq(decode_rc(msg, i, NULL), NSC_WIRE_TRUNCATED, "prefix %zu", i);
}

Test(a2c, malformed_corpus)
{
    static const struct { const char *name; const char *bytes; size_t len; int want; } cases[] = {
        {"not an array", "\x01", 1, NSC_WIRE_BAD_TYPE},
        {"wrong arity", "\x93\x01\x01\xa1" "a", 4, NSC_WIRE_BAD_RECORD},
        {"ack as batch", "\x95\x02\x01\xa1" "a\x00\x00", 7, NSC_WIRE_BAD_RECORD},
        {"bad version", "\x99\x01\x05\xa1" "a\x00\xa0\x00\x90\x90\x90", 11, NSC_WIRE_BAD_VERSION},
        {"v4 without ledgers", "\x9b\x01\x04\xa1" "a\x05\x00\xa0\x00\x90\x90\x90\xce\x00\x00\x00\x00", 17,
         NSC_WIRE_BAD_RECORD},
        {"v4 crc for ledgers", "\x9c\x01\x04\xa1" "a\x05\x00\xa0\x00\x90\x90\x90\xce\x00\x00\x00\x00", 17,
         NSC_WIRE_BAD_TYPE},
        {"v4 str ledger", "\x9c\x01\x04\xa1" "a\x05\x00\xa0\x00\x90\x90\x90\x91\xa1x\xce\x00\x00\x00\x00", 20,
         NSC_WIRE_BAD_TYPE},
        {"v4 huge ledger count", "\x9c\x01\x04\xa1" "a\x05\x00\xa0\x00\x90\x90\x90\xdd\xff\xff\xff\xff", 17,
         NSC_WIRE_TOO_MANY},
        {"v4 ledger longer than message", "\x9c\x01\x04\xa1" "a\x05\x00\xa0\x00\x90\x90\x90\x91\xc4\x09", 15,
         NSC_WIRE_TRUNCATED},
        {"v3 without crc", "\x9a\x01\x03\xa1" "a\x05\x00\xa0\x00\x90\x90\x90", 12, NSC_WIRE_BAD_RECORD},
        {"v3 crc not uint32", "\x9b\x01\x03\xa1" "a\x05\x00\xa0\x00\x90\x90\x90\x00", 13, NSC_WIRE_BAD_TYPE},
        {"v3 crc str", "\x9b\x01\x03\xa1" "a\x05\x00\xa0\x00\x90\x90\x90\xa0", 13, NSC_WIRE_BAD_TYPE},
        {"v3 crc wrong", "\x9b\x01\x03\xa1" "a\x05\x00\xa0\x00\x90\x90\x90\xce\x00\x00\x00\x00", 17,
         NSC_WIRE_BAD_CHECKSUM},
        {"v3 crc trailing", "\x9b\x01\x03\xa1" "a\x05\x00\xa0\x00\x90\x90\x90\xce\x00\x00\x00\x00\x00", 18,
         NSC_WIRE_TRAILING},
        {"v2 without epoch", "\x99\x01\x02\xa1" "a\x00\xa0\x00\x90\x90\x90", 11, NSC_WIRE_BAD_RECORD},
        {"v1 with epoch", "\x9a\x01\x01\xa1" "a\x05\x00\xa0\x00\x90\x90\x90", 12, NSC_WIRE_BAD_RECORD},
        {"str for epoch", "\x9a\x01\x02\xa1" "a\xa0\x00\xa0\x00\x90\x90\x90", 12, NSC_WIRE_BAD_TYPE},
        {"negative epoch", "\x9a\x01\x02\xa1" "a\xff\x00\xa0\x00\x90\x90\x90", 12, NSC_WIRE_BAD_VALUE},
        {"v2 trailing", "\x9a\x01\x02\xa1" "a\x05\x00\xa0\x00\x90\x90\x90\x00", 13, NSC_WIRE_TRAILING},
        {"str for seq", "\x99\x01\x01\xa1" "a\xa0\xa0\x00\x90\x90\x90", 11, NSC_WIRE_BAD_TYPE},
        {"reserved byte", "\x99\x01\x01\xa1" "a\xc1\xa0\x00\x90\x90\x90", 11, NSC_WIRE_BAD_TYPE},
        {"str section", "\x99\x01\x01\xa1" "a\x00\xa0\x00\x91\xa1x\x90\x90", 13, NSC_WIRE_BAD_TYPE},
        {"trailing", "\x99\x01\x01\xa1" "a\x00\xa0\x00\x90\x90\x90\x00", 12, NSC_WIRE_TRAILING},
        {"bad life event", "\x99\x01\x01\xa1" "a\x00\xa0\x00\x90\x91\x98\x04\x00\x01\x00\x00\xa0\xa0\x90\x90", 20,
         NSC_WIRE_BAD_VALUE},
        {"bad reason", "\x99\x01\x01\xa1" "a\x00\xa0\x00\x90\x91\x98\x02\x07\x01\x00\x00\xa0\xa0\x90\x90", 20,
         NSC_WIRE_BAD_VALUE},
        {"pid over u32", "\x99\x01\x01\xa1" "a\x00\xa0\x00\x90\x90\x91\x94\xcf\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
         24, NSC_WIRE_BAD_VALUE},
        {"alias arity", "\x99\x01\x01\xa1" "a\x00\xa0\x00\x90\x90\x91\x93\x00\x00\x00", 15, NSC_WIRE_BAD_RECORD},
        {"huge section count", "\x99\x01\x01\xa1" "a\x00\xa0\x00\xdd\xff\xff\xff\xff", 13, NSC_WIRE_TOO_MANY},
        {"bin longer than message", "\x99\x01\x01\xa1" "a\x00\xa0\x00\x91\xc6\x00\x10\x00\x00", 14, NSC_WIRE_TRUNCATED},
        {"negative seq", "\x99\x01\x01\xa1" "a\xff\xa0\x00\x90\x90\x90", 11, NSC_WIRE_BAD_VALUE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(decode_rc((const uint8_t *)cases[i].bytes, cases[i].len, NULL), cases[i].want,
                     "%s: got %d", cases[i].name, decode_rc((const uint8_t *)cases[i].bytes, cases[i].len, NULL));
    /* a text of 64 bytes does not fit char[64] */
    uint8_t big[80] = {0x99, 0x01, 0x01, 0xd9, 64};
    memset(big + 5, 'a', 64);
    cr_assert_eq(decode_rc(big, 69, NULL), NSC_WIRE_BAD_VALUE);
}

/* Every byte of a batch changed (framing or value, a bit or all of it): the
 * decoder refuses it, and so does the agent's check before a send. */
Test(a2c, every_changed_byte_is_refused)
{
    size_t n = make_batch();
    nsc_a2c_batch d;
    cr_assert_eq(nsc_a2c_batch_check(msg, n), 0);
    cr_assert_eq(nsc_a2c_decode_batch(msg, n, NULL, &d), 0);
    cr_assert_neq(d.crc, 0);
    nsc_a2c_batch_release(&d);
    for (size_t i = 0; i < n; i++) {
        static const uint8_t masks[] = {0x01, 0x80, 0xff};
        for (size_t m = 0; m < sizeof masks; m++) {
            msg[i] ^= masks[m];
            cr_assert_neq(decode_rc(msg, n, NULL), 0, "byte %zu ^ %#x decoded", i, masks[m]);
            cr_assert_neq(nsc_a2c_batch_check(msg, n), 0, "byte %zu ^ %#x passed the check", i, masks[m]);
            msg[i] ^= masks[m];
        }
    }
    /* a flip inside a value keeps the framing: only the CRC finds it */
    size_t at = n - 5 - 1;  /* the last byte of the last ledger batch */
    msg[at] ^= 1;
    cr_assert_eq(decode_rc(msg, n, NULL), NSC_WIRE_BAD_CHECKSUM);
    cr_assert_eq(nsc_a2c_batch_check(msg, n), NSC_WIRE_BAD_CHECKSUM);
    msg[at] ^= 1;
    /* older batches carry no CRC: the check decodes them */
    cr_assert_eq(nsc_a2c_batch_check("\x9a\x01\x02\xa1" "a\x09\x07\xa2" "h0\x05\x90\x90\x90", 14), 0);
    cr_assert_eq(nsc_a2c_batch_check("\x9a\x01\x02\xa1" "a\x09\x07\xa2" "h0\x05\x90\x90\x91", 14),
                 NSC_WIRE_TRUNCATED);
}

/* A batch about to be rejected is named by its head, whatever follows. */
Test(a2c, batch_name_reads_the_head_only)
{
    size_t n = make_batch();
    char agent[64];
    uint64_t seq;
    msg[n - 1] ^= 0xff;
    cr_assert_eq(nsc_a2c_batch_name(msg, n, agent, &seq), 0);
    cr_assert_str_eq(agent, "agent-a");
    cr_assert_eq(seq, 1ull << 40);
    cr_assert_eq(nsc_a2c_batch_name("\x99\x01\x01\xa1" "a\x07\xa2" "h0\x05\x90\x90\x91", 13, agent, &seq), 0);
    cr_assert_eq(seq, 7);
    cr_assert_eq(nsc_a2c_batch_name("\x9b\x01\x03\xa1" "a\x05", 6, agent, &seq), NSC_WIRE_TRUNCATED);
    cr_assert_str_eq(agent, "unknown");
    cr_assert_eq(nsc_a2c_batch_name("\x95\x02\x01\xa1" "a\x00\x00", 7, agent, &seq), NSC_WIRE_BAD_RECORD);
    msg[2] = NSC_A2C_BATCH_VERSION + 1;  /* a newer agent's batch is not named: never rejected */
    cr_assert_eq(nsc_a2c_batch_name(msg, n, agent, &seq), NSC_WIRE_BAD_VERSION);
}

Test(a2c, reject_round_trip_and_malformed)
{
    uint8_t buf[NSC_A2C_SMALL_MAX];
    nsc_a2c_reject r = {.agent = "a23456789012345678901234567890123456789012345678901234567890123", .seq = UINT64_MAX,
                        .reason = "r23456789012345678901234567890123456789012345678901234567890123"}, d;
    size_t n = nsc_a2c_encode_reject(&r, buf);
    cr_assert_leq(n, NSC_A2C_SMALL_MAX);
    cr_assert_eq(nsc_a2c_kind(buf, n), NSC_A2C_REJECT);
    cr_assert_eq(nsc_a2c_decode_reject(buf, n, &d), 0);
    cr_assert(memcmp(&r, &d, sizeof r) == 0);
    for (size_t i = 1; i < n; i++)
        cr_assert_eq(nsc_a2c_decode_reject(buf, i, &d), NSC_WIRE_TRUNCATED, "prefix %zu", i);
    nsc_a2c_ack ack;
    cr_assert_eq(nsc_a2c_decode_ack(buf, n, &ack), NSC_WIRE_BAD_RECORD);
    cr_assert_eq(nsc_a2c_decode_reject("\x95\x05\x01\xa1" "a\x00\x00", 7, &d), NSC_WIRE_BAD_TYPE);
    cr_assert_eq(nsc_a2c_decode_reject("\x94\x05\x01\xa1" "a\x00", 6, &d), NSC_WIRE_BAD_RECORD);
    cr_assert_eq(nsc_a2c_decode_reject("\x95\x05\x02\xa1" "a\x00\xa0", 7, &d), NSC_WIRE_BAD_VERSION);
    cr_assert_eq(nsc_a2c_decode_reject("\x95\x05\x01\xa1" "a\x00\xa0\x00", 8, &d), NSC_WIRE_TRAILING);
    cr_assert_eq(nsc_a2c_kind("\x91\x09", 2), NSC_WIRE_BAD_RECORD);
}

/* The collector's UDP clock port offer: [8, 1, agent, port], port 1..65535. */
Test(a2c, udp_offer_round_trip_and_malformed)
{
    uint8_t buf[NSC_A2C_SMALL_MAX];
    nsc_a2c_udp u = {.agent = "a23456789012345678901234567890123456789012345678901234567890123", .port = 65535}, d;
    size_t n = nsc_a2c_encode_udp(&u, buf);
    cr_assert_eq(nsc_a2c_kind(buf, n), NSC_A2C_UDP);
    cr_assert_eq(nsc_a2c_decode_udp(buf, n, &d), 0);
    cr_assert(memcmp(&u, &d, sizeof u) == 0);
    for (size_t i = 1; i < n; i++)
        cr_assert_eq(nsc_a2c_decode_udp(buf, i, &d), NSC_WIRE_TRUNCATED, "prefix %zu", i);
    nsc_a2c_probe p;
    cr_assert_eq(nsc_a2c_decode_probe(buf, n, &p), NSC_WIRE_BAD_RECORD, "an offer is no probe");
    cr_assert_eq(nsc_a2c_decode_udp("\x94\x08\x01\xa1" "a\x00", 6, &d), NSC_WIRE_BAD_VALUE, "port 0");
    cr_assert_eq(nsc_a2c_decode_udp("\x94\x08\x01\xa1" "a\xce\x00\x01\x00\x00", 10, &d), NSC_WIRE_BAD_VALUE,
                 "port 65536");
    cr_assert_eq(nsc_a2c_decode_udp("\x94\x08\x02\xa1" "a\x01", 6, &d), NSC_WIRE_BAD_VERSION);
    cr_assert_eq(nsc_a2c_decode_udp("\x95\x08\x01\xa1" "a\x01\x01", 7, &d), NSC_WIRE_BAD_RECORD);
    cr_assert_eq(nsc_a2c_decode_udp("\x94\x08\x01\xa1" "a\x01\x01", 7, &d), NSC_WIRE_TRAILING);
    cr_assert_eq(nsc_a2c_decode_udp("\x94\x08\x01\xa1" "a\xa1" "x", 7, &d), NSC_WIRE_BAD_TYPE);
}

Test(a2c, limits)
{
    size_t n = make_batch();
    nsc_dec_limits small = {.max_msg = n - 1};
    cr_assert_eq(decode_rc(msg, n, &small), NSC_WIRE_TOO_LARGE);
    nsc_dec_limits few = {.max_records = 1};
    cr_assert_eq(decode_rc(msg, n, &few), NSC_WIRE_TOO_MANY);  /* the top array has 12 */
    cr_assert_eq(nsc_a2c_kind("\x91\x09", 2), NSC_WIRE_BAD_RECORD);
    cr_assert_eq(nsc_a2c_kind("", 0), NSC_WIRE_EMPTY);
}
