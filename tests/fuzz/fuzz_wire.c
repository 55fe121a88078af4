/* fuzz_wire.c: libFuzzer target for the wire decoder.
 *
 * Any input must be accepted or rejected with an error code, without a crash,
 * a sanitizer report or a leak. An input that decodes must also re-encode to
 * a batch that decodes to the same values (the codec loses nothing it kept).
 * The scanner (nsc_batch_scan, the agent's reader) must return what the
 * decoder returns for every input and keep exactly what it is asked to.
 * The same input as an acknowledgement (nsc_ack_decode, the plugin's reader)
 * is rejected, or re-encodes to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scan_check.h"
#include "wire.h"

static size_t batch_records(const nsc_batch *b)
{
    return b->nstrs + b->nctxs + b->nevents + b->nstates + b->ncompletions +
           (size_t)b->has_counters;
}

static int reencode(const nsc_batch *b, uint8_t *buf, size_t cap, size_t *len)
{
    nsc_enc e;
    int rc = nsc_enc_begin(&e, buf, cap, &b->hdr);
    for (size_t i = 0; i < b->nstrs && rc == 0; i++)
        rc = nsc_enc_str(&e, &b->strs[i]);
    for (size_t i = 0; i < b->nctxs && rc == 0; i++)
        rc = nsc_enc_ctx(&e, &b->ctxs[i]);
    for (size_t i = 0; i < b->nevents && rc == 0; i++)
        rc = nsc_enc_event(&e, &b->events[i]);
    for (size_t i = 0; i < b->nstates && rc == 0; i++)
        rc = nsc_enc_state(&e, &b->states[i]);
    for (size_t i = 0; i < b->ncompletions && rc == 0; i++)
        rc = nsc_enc_completion(&e, &b->completions[i]);
    if (b->has_counters && rc == 0)
        rc = nsc_enc_counters(&e, &b->counters);
    *len = nsc_enc_finish(&e);
    return rc;
}

#define SAME_ARRAY(a, b, arr, n) \
    ((a)->n == (b)->n && ((a)->n == 0 || memcmp((a)->arr, (b)->arr, (a)->n * sizeof *(a)->arr) == 0))

/* Decoded records are zeroed before they are filled, so bytes compare. */
static int same_batch(const nsc_batch *a, const nsc_batch *b)
{
    const nsc_batch_hdr *x = &a->hdr, *y = &b->hdr;
    return x->version == y->version && x->seq == y->seq && x->stream == y->stream &&
           x->acked == y->acked && x->base_ns == y->base_ns &&
           x->sent_ns == y->sent_ns && x->proc.pid == y->proc.pid &&
           x->proc.local_rank == y->proc.local_rank && x->proc.gpu == y->proc.gpu &&
           strcmp(x->proc.job, y->proc.job) == 0 && strcmp(x->proc.host, y->proc.host) == 0 &&
           SAME_ARRAY(a, b, events, nevents) && SAME_ARRAY(a, b, states, nstates) &&
           SAME_ARRAY(a, b, completions, ncompletions) && SAME_ARRAY(a, b, strs, nstrs) &&
           SAME_ARRAY(a, b, ctxs, nctxs) && a->has_counters == b->has_counters &&
           memcmp(&a->counters, &b->counters, sizeof a->counters) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static nsc_scan scan;  /* reused, as the agent reuses its scan */
    uint32_t keep_types = size ? (uint32_t)data[size - 1] * 0x0101u : 0;  /* varies with the input */
    if (scan_check(data, size, keep_types, size ? data[0] : 0, &scan))
        abort();
    nsc_ack ack;
    uint8_t ack_bytes[NSC_ACK_LEN];
    if (nsc_ack_decode(data, size, &ack) == NSC_WIRE_OK &&
        (nsc_ack_encode(&ack, ack_bytes), memcmp(ack_bytes, data, size) != 0))
        abort();
    nsc_batch first, second;
    if (nsc_batch_decode(data, size, NULL, &first) != NSC_WIRE_OK)
        return 0;
    size_t cap = NSC_WIRE_REC_MAX * (batch_records(&first) + 1), len;
    uint8_t *buf = malloc(cap);
    if (!buf)
        abort();
    if (reencode(&first, buf, cap, &len) != NSC_WIRE_OK)
        abort();
    if (nsc_batch_decode(buf, len, NULL, &second) != NSC_WIRE_OK)
        abort();
    if (!same_batch(&first, &second))
        abort();
    nsc_batch_release(&second);
    nsc_batch_release(&first);
    free(buf);
    return 0;
}
