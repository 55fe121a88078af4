/* fuzz_seeds.c: writes a fuzzer's seed corpus (valid messages) into a
 * directory, so no binary seeds live in the repository:
 *   fuzz_seeds wire DIR   plugin batches
 *   fuzz_seeds a2c DIR    agent-to-collector batch, ack, rejection, probe, sample, UDP offer, fetch and detail
 *   fuzz_seeds ledger DIR ledger batches
 *   fuzz_seeds uprobe DIR clock probe datagrams: a request and an answer */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "a2c.h"
#include "uprobe.h"
#include "wire_samples.h"

static uint8_t buf[1 << 16];

static int write_seed(const char *dir, const char *name, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || len == 0 || fwrite(buf, 1, len, f) != len) {
        fprintf(stderr, "fuzz_seeds: cannot write %s\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    return fclose(f);
}

/* A batch of a few records of one kind: small seeds mutate well. */
static size_t small_batch(unsigned variant)
{
    nsc_batch_hdr h;
    nsc_enc e;
    sample_hdr(&h);
    h.seq = variant;
    if (nsc_enc_begin(&e, buf, sizeof buf, &h) != NSC_WIRE_OK)
        return 0;
    for (unsigned i = 0; i < 3; i++) {
        nsc_event ev;
        nsc_state_rec st;
        sample_event(&ev, (variant * 3 + i) % NSC_T_COUNT, 10 + i, &h);
        sample_state(&st, (variant * 7 + i) % NSC_S_COUNT, 10 + i, &h);
        if (nsc_enc_event(&e, &ev) != NSC_WIRE_OK || nsc_enc_state(&e, &st) != NSC_WIRE_OK)
            return 0;
    }
    return nsc_enc_finish(&e);
}

static int wire_seeds(const char *dir)
{
    int rc = write_seed(dir, "seed-all-records", sample_batch(buf, sizeof buf));
    nsc_ack_encode(&(nsc_ack){.stream = 1, .next = 2, .instance = 3, .kind = NSC_ACK_RESEND}, buf);
    if (rc == 0)
        rc = write_seed(dir, "seed-ack", NSC_ACK_LEN);
    for (unsigned v = 0; v < 6 && rc == 0; v++) {
        char name[32];
        snprintf(name, sizeof name, "seed-small-%u", v);
        rc = write_seed(dir, name, small_batch(v));
    }
    return rc;
}

/* An a2c batch of two small plugin batches, a death with progress, an alias
 * and a ledger batch. */
static size_t a2c_batch(void)
{
    static uint8_t sect[2][4096];
    nsc_a2c_section secs[2];
    for (unsigned i = 0; i < 2; i++) {
        size_t n = small_batch(i);
        memcpy(sect[i], buf, n);
        secs[i] = (nsc_a2c_section){sect[i], (uint32_t)n};
    }
    static uint8_t ledger[4096];
    nsc_ledger_batch lb = sample_ledger();
    if (nsc_ledger_bound(&lb) > sizeof ledger)
        return 0;
    nsc_a2c_section ledgers = {ledger, (uint32_t)nsc_ledger_encode(&lb, ledger)};
    nsc_a2c_progress prog = {.comm_id = 0xabc, .seq = 7, .rank = 1, .func = "AllReduce"};
    nsc_a2c_life life = {.event = NSC_A2C_DIED, .reason = NSC_A2C_REASON_EXITED, .pid = 42, .ts_ns = 9,
                         .last_batch_seq = 3, .job = "job", .host = "node0", .nprogress = 1, .progress = &prog};
    nsc_a2c_alias alias = {.proxy_pid = 43, .origin_pid = 42, .proxy_id = 5, .new_id = 1ull << 63};
    nsc_a2c_batch b = {.agent = "agent0", .host = "node0", .epoch = 0x5eed, .seq = 12, .sent_ns = 100, .nsections = 2,
                       .nlife = 1, .naliases = 1, .sections = secs, .life = &life, .aliases = &alias,
                       .nledgers = 1, .ledgers = &ledgers};
    return nsc_a2c_batch_bound(&b) <= sizeof buf ? nsc_a2c_encode_batch(&b, buf) : 0;
}

static int a2c_seeds(const char *dir)
{
    int rc = write_seed(dir, "seed-batch", a2c_batch());
    nsc_a2c_ack ack = {.agent = "agent0", .seq = 12, .credit = 32};
    rc = rc ? rc : write_seed(dir, "seed-ack", nsc_a2c_encode_ack(&ack, buf));
    nsc_a2c_reject rej = {.agent = "agent0", .seq = 12, .reason = "a2c_bad_checksum"};
    rc = rc ? rc : write_seed(dir, "seed-reject", nsc_a2c_encode_reject(&rej, buf));
    nsc_a2c_probe pr = {.kind = NSC_A2C_PROBE, .agent = "agent0", .host = "node0", .id = 1, .t1 = 10};
    rc = rc ? rc : write_seed(dir, "seed-probe", nsc_a2c_encode_probe(&pr, buf));
    pr.kind = NSC_A2C_SAMPLE, pr.t2 = 20, pr.t3 = 21, pr.t4 = 30;
    rc = rc ? rc : write_seed(dir, "seed-sample", nsc_a2c_encode_probe(&pr, buf));
    nsc_a2c_udp udp = {.agent = "agent0", .port = 7760};
    rc = rc ? rc : write_seed(dir, "seed-udp", nsc_a2c_encode_udp(&udp, buf));
    nsc_a2c_fetch f = {.agent = "agent0", .id = 3, .job = "job1", .from_ns = 10, .to_ns = 20, .types = 6,
                       .npids = 2, .pids = {42, 43}};
    rc = rc ? rc : write_seed(dir, "seed-fetch", nsc_a2c_encode_fetch(&f, buf));
    static const uint8_t raw[] = {0x90};
    nsc_a2c_piece piece = {12, raw, sizeof raw};
    nsc_a2c_detail d = {.agent = "agent0", .host = "node0", .epoch = 0x5eed, .id = 3, .last = 1, .held_from_ns = 5,
                        .held_to_ns = 25, .npieces = 1, .pieces = &piece};
    return rc ? rc : write_seed(dir, "seed-detail", nsc_a2c_encode_detail(&d, buf));
}

/* The sample batch, and its records one by one. */
static int ledger_seeds(const char *dir)
{
    nsc_ledger_batch b = sample_ledger();
    int rc = nsc_ledger_bound(&b) <= sizeof buf ? write_seed(dir, "seed-ledger", nsc_ledger_encode(&b, buf)) : -1;
    const nsc_ledger_rec *recs = b.recs;
    for (uint32_t i = 0; i < 3 && rc == 0; i++) {
        char name[32];
        snprintf(name, sizeof name, "seed-ledger-%u", i);
        b.recs = recs + i;
        b.nrecs = 1;
        rc = write_seed(dir, name, nsc_ledger_encode(&b, buf));
    }
    return rc;
}

static int uprobe_seeds(const char *dir)
{
    nsc_uprobe p = {.kind = NSC_UPROBE_REQUEST, .id = 7, .token = 0x0123456789abcdefull};
    nsc_uprobe_encode(&p, buf);
    int rc = write_seed(dir, "seed-request", NSC_UPROBE_LEN);
    p.kind = NSC_UPROBE_ANSWER, p.t2 = 1000, p.t3 = 1500;
    nsc_uprobe_encode(&p, buf);
    return rc ? rc : write_seed(dir, "seed-answer", NSC_UPROBE_LEN);
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "wire") != 0 && strcmp(argv[1], "a2c") != 0 &&
                      strcmp(argv[1], "ledger") != 0 && strcmp(argv[1], "uprobe") != 0)) {
        fprintf(stderr, "usage: fuzz_seeds wire|a2c|ledger|uprobe CORPUS_DIR\n");
        return 2;
    }
    if (mkdir(argv[2], 0755) != 0 && errno != EEXIST) {
        perror(argv[2]);
        return 1;
    }
    int rc = strcmp(argv[1], "wire") == 0 ? wire_seeds(argv[2])
             : strcmp(argv[1], "a2c") == 0 ? a2c_seeds(argv[2])
             : strcmp(argv[1], "uprobe") == 0 ? uprobe_seeds(argv[2])
                                           : ledger_seeds(argv[2]);
    return rc == 0 ? 0 : 1;
}
