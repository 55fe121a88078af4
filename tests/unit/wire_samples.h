/* wire_samples.h: sample records for the wire codec's tests and fuzz seeds.
 *
 * Every descriptor field of every event type gets a distinctive non-zero
 * value (negative ranks, roots and peers, type maxima where the field allows),
 * so a codec that drops, swaps or truncates a field fails a round trip.
 */
#ifndef NCCLSCOPE_WIRE_SAMPLES_H
#define NCCLSCOPE_WIRE_SAMPLES_H

#include <stddef.h>

#include "ledger.h"
#include "wire.h"

void sample_hdr(nsc_batch_hdr *h);
/* An event of the given type with id, relative to the header's time and pid. */
void sample_event(nsc_event *ev, unsigned type, uint64_t id, const nsc_batch_hdr *h);
/* Mark ev as a PXN event started for another process. */
void sample_make_foreign(nsc_event *ev, const nsc_batch_hdr *h);
void sample_state(nsc_state_rec *s, unsigned state, uint64_t id, const nsc_batch_hdr *h);
void sample_ctx(nsc_ctx_def *c, uint16_t index);
void sample_str(nsc_str_def *s, nsc_str id);
void sample_counters(nsc_counters *c);

/* Encode a batch holding every record kind: strings, contexts, one event of
 * each type (and a foreign copy), every state, completions and counters.
 * Returns its length, or 0 if cap is too small. */
size_t sample_batch(void *buf, size_t cap);

/* The text of the file at path, NUL-terminated, in a static buffer of 1 MiB
 * (the docs the tests check against the code); NULL if it cannot be read. */
const char *sample_doc(const char *path);

/* A ledger batch of three AllReduces of one communicator with two edges each,
 * the last in flight; its records live in static storage. */
nsc_ledger_batch sample_ledger(void);

#endif
