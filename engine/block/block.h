/* block.h: the stored encoding of a block of events of one (comm, rank).
 *
 * Owns the value format of the store's `blocks` database: a fixed big-endian
 * header, then the records as columns (one byte stream per field, each value
 * a zigzag varint of its difference to the same field of the previous record
 * of the same type, or to a related field of the same record: stop - start),
 * then optionally zstd over the columns. Similar values sit together, which is
 * what lets zstd reach a few bytes per event. Decoding validates every length
 * before it allocates and rejects a malformed block with a precise error.
 * docs/collector-store.md, "Blocks", is the reference.
 */
#ifndef NCCLSCOPE_BLOCK_H
#define NCCLSCOPE_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"

enum nsc_block_err {
    NSC_BLOCK_OK = 0,
    NSC_BLOCK_ESHORT = -1,      /* shorter than the header */
    NSC_BLOCK_EMAGIC = -2,      /* not a block */
    NSC_BLOCK_EVERSION = -3,    /* unknown block version */
    NSC_BLOCK_ECODEC = -4,      /* unknown compression codec */
    NSC_BLOCK_ELIMIT = -5,      /* record counts or sizes over the limits */
    NSC_BLOCK_EDECOMPRESS = -6, /* compressed payload corrupt or of the wrong size */
    NSC_BLOCK_ECOLUMN = -7,     /* column table does not match the payload */
    NSC_BLOCK_ETRUNC = -8,      /* a column ends before its records do */
    NSC_BLOCK_ETRAILING = -9,   /* a column has bytes after its records */
    NSC_BLOCK_ETYPE = -10,      /* unknown event type or state */
    NSC_BLOCK_ENOMEM = -11
};

#define NSC_BLOCK_MAX_RECORDS (1u << 20) /* per kind (events, states, completions) */
#define NSC_BLOCK_HDR_LEN 44

const char *nsc_block_strerror(int err);

typedef struct nsc_block_hdr {
    uint32_t proc;          /* store-wide process id that produced the records */
    uint32_t nevents, nstates, ncompletions;
    uint64_t t_min, t_max;  /* raw host times spanned by all records */
} nsc_block_hdr;

/* Encoder: reusable scratch owned by one writer. */
typedef struct nsc_block_enc nsc_block_enc;

/* level 0 stores columns uncompressed; 1..19 is the zstd level. */
int nsc_block_enc_new(int level, nsc_block_enc **out);
void nsc_block_enc_free(nsc_block_enc *e);
void nsc_block_begin(nsc_block_enc *e, uint32_t proc);
/* Rewrites every interned-string field of the events added from now on
 * through map (the store turns process-local ids into store-wide ones). */
typedef nsc_str (*nsc_block_str_map)(void *arg, nsc_str id);
void nsc_block_set_str_map(nsc_block_enc *e, nsc_block_str_map map, void *arg);
/* Records may come in any order; in their stored order (below) they are
 * encoded without being sorted or copied again. */
int nsc_block_add_event(nsc_block_enc *e, const nsc_event *ev);
int nsc_block_add_state(nsc_block_enc *e, const nsc_state_rec *s);
int nsc_block_add_completion(nsc_block_enc *e, const nsc_completion *c);
/* Encode what was added. *out stays valid until the next begin; hdr gets the
 * header (times, counts). Returns 0 or an error. Records are stored in a
 * canonical order: events by id, states by (event id, time), completions by
 * id; decoding returns them in that order. */
int nsc_block_finish(nsc_block_enc *e, const uint8_t **out, size_t *len, nsc_block_hdr *hdr);
/* After finish: the events in stored order (their positions in the block). */
const nsc_event *nsc_block_events(const nsc_block_enc *e, size_t *n);

/* Header only (cheap: no decompression). */
int nsc_block_read_hdr(const void *buf, size_t len, nsc_block_hdr *hdr);

/* A decoded block; all arrays live in one allocation. */
typedef struct nsc_block {
    nsc_block_hdr hdr;
    nsc_event *events;
    nsc_state_rec *states;
    nsc_completion *completions;
    void *mem;
} nsc_block;

int nsc_block_decode(const void *buf, size_t len, nsc_block *out);

/* What nsc_block_decode_sel decodes besides the events (STATES,
 * COMPLETIONS), and TIMES_ONLY: of the events' common fields only type,
 * start_ns and stop_ns (the others read 0; the payload is decoded in full,
 * its fields are relative to those times at most). */
enum { NSC_BLOCK_STATES = 1u << 0, NSC_BLOCK_COMPLETIONS = 1u << 1, NSC_BLOCK_TIMES_ONLY = 1u << 2 };

/* Decode only the events whose type is in the mask `types` (1 << nsc_type),
 * and the states and completions only when `parts` asks for them. out->hdr
 * then counts what was decoded (nevents: the events kept, in stored order;
 * nstates, ncompletions: 0 when not asked for). Cheaper than a full decode:
 * the values of other events are skipped, not decoded, and the state and
 * completion columns, the common columns TIMES_ONLY leaves out and the
 * payload slots no selected type has are not read (nor checked).
 * nsc_block_decode is this with every type and both parts. */
int nsc_block_decode_sel(const void *buf, size_t len, uint32_t types, unsigned parts,
                         nsc_block *out);
void nsc_block_release(nsc_block *b);

/* Decoding scratch kept between blocks (zstd context, column buffer): a
 * reader that decodes many blocks makes one and decodes with it. Not for
 * two threads at once. */
typedef struct nsc_block_dec nsc_block_dec;
int nsc_block_dec_new(nsc_block_dec **out);
void nsc_block_dec_free(nsc_block_dec *d);
/* nsc_block_decode_sel with d's scratch. */
int nsc_block_decode_with(nsc_block_dec *d, const void *buf, size_t len, uint32_t types,
                          unsigned parts, nsc_block *out);

#endif
