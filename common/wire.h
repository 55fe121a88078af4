/* wire.h: the msgpack batch codec between plugin, agent and collector.
 *
 * A batch is one ZeroMQ message: a versioned header (protocol version, job,
 * host, pid, batch sequence, base time) followed by records in the order they
 * were added: string and context definitions, events, states, completions and
 * counters, each a positional msgpack array. docs/protocol.md is the reference.
 *
 * Encoding writes into a caller-owned buffer and never allocates. Decoding
 * validates the whole message before it allocates anything, then makes exactly
 * one allocation for the decoded batch; a malformed message is rejected whole
 * with a precise error and nothing leaks.
 */
#ifndef NCCLSCOPE_WIRE_H
#define NCCLSCOPE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"

#define NSC_WIRE_VERSION 1
#define NSC_WIRE_MAX_MSG (16u << 20)  /* default ZMQ_MAXMSGSIZE for batches */

/* Errors: 0 is success, all errors are negative. */
typedef enum nsc_wire_err {
    NSC_WIRE_OK = 0,
    NSC_WIRE_EMPTY = -1,      /* zero-length message */
    NSC_WIRE_TOO_LARGE = -2,  /* message longer than the limit */
    NSC_WIRE_TRUNCATED = -3,  /* message ends inside a value, or a declared length needs more bytes than are left */
    NSC_WIRE_BAD_TYPE = -4,   /* a value of the wrong msgpack type */
    NSC_WIRE_TOO_MANY = -5,   /* declared array/map/string length over a limit (max_records, max_msg) */
    NSC_WIRE_TOO_DEEP = -6,   /* nesting deeper than allowed */
    NSC_WIRE_BAD_VERSION = -7,/* unknown protocol version */
    NSC_WIRE_TRAILING = -8,   /* bytes after the batch */
    NSC_WIRE_BAD_RECORD = -9, /* unknown record tag or wrong record arity */
    NSC_WIRE_BAD_VALUE = -10, /* a value out of its range (state >= 32, ...) */
    NSC_WIRE_MISSING = -11,   /* a required header field is absent */
    NSC_WIRE_NOMEM = -12,     /* allocation failed (after validation) */
    NSC_WIRE_FULL = -13,      /* encoder: record does not fit; buffer unchanged */
    NSC_WIRE_BAD_CHECKSUM = -14 /* the message's CRC does not match its bytes (a2c batch) */
} nsc_wire_err;
#define NSC_WIRE_NERR 15  /* codes, success included: 0 down to -(NSC_WIRE_NERR - 1) */

/* Record tags: an event record's tag is its event type (0..15). */
enum {
    NSC_WIRE_TAG_STATE = 16,
    NSC_WIRE_TAG_COMPLETION = 17,
    NSC_WIRE_TAG_STR = 18,
    NSC_WIRE_TAG_CTX = 19,
    NSC_WIRE_TAG_COUNTERS = 20,
    NSC_WIRE_TAG_COUNT = 21
};

/* No encoded record (nor the batch header) is longer than this. A buffer of
 * NSC_WIRE_REC_MAX * (records + 1) bytes always holds a whole batch. */
#define NSC_WIRE_REC_MAX 640
/* Values nested deeper than this (inside unknown header keys) are rejected. */
#define NSC_WIRE_MAX_DEPTH 32

const char *nsc_wire_strerror(int err);

#define NSC_WIRE_HDR_COUNTERS 8

/* Batch header. */
typedef struct nsc_batch_hdr {
    uint32_t version;  /* NSC_WIRE_VERSION when encoding */
    uint64_t seq;      /* per-process batch sequence, from 0 */
    uint64_t stream;   /* random, non-zero: names this sequence of batches
                        * (0: a sender that takes no acknowledgements) */
    uint64_t acked;    /* every batch before this seq was acknowledged as
                        * stored by an agent (none is sent again) */
    uint64_t base_ns;  /* event times are encoded relative to this */
    uint64_t sent_ns;  /* when the batch was encoded (host monotonic) */
    nsc_proc proc;
    uint8_t final;     /* 1: the plugin's last batch (it shut down: every
                        * communicator finalized), so the process's silence and
                        * exit that follow are a clean end, not a failure */
    uint64_t clock_err_ns; /* the bound of the sender's conversion of its
                            * clock to CLOCK_MONOTONIC, which every time of
                            * the batch carries (0: none, or an exact clock) */
    /* The counters newer than the counters record's 7 fields (nsc_counters
     * from cost_ns on, in order), sent in the header as "counters", which a
     * decoder older than them skips: as the record's last fields, the first
     * five once were, such a decoder rejects them as too many. */
    uint64_t counters[NSC_WIRE_HDR_COUNTERS];
} nsc_batch_hdr;

/* The plugin's clock_err_ns where it reads the CPU's counter stays within
 * this from a run's first record on (docs/plugin-internals.md, "Clock"). */
#define NSC_CLOCK_BOUND_NS 100u

/* Rewrite the "acked" header field of a batch nsc_enc_begin wrote (a resend
 * says what was acknowledged since it was encoded). */
void nsc_wire_set_acked(void *batch, uint64_t acked);

/* Acknowledgements, agent to plugin (docs/protocol.md): NSC_ACK_LEN bytes,
 * stream (8 bytes big-endian, first: the subscription prefix), next (8),
 * instance (8, the agent process's random id), kind (1). STORED: every batch
 * of the stream before `next` is in the agent's spool. RESEND: a batch after
 * `next` was dropped out of order; send again from `next`. */
#define NSC_ACK_LEN 25
enum { NSC_ACK_STORED = 0, NSC_ACK_RESEND = 1 };
typedef struct nsc_ack {
    uint64_t stream, next, instance;
    uint8_t kind;
} nsc_ack;
void nsc_ack_encode(const nsc_ack *a, uint8_t out[NSC_ACK_LEN]);
/* Returns 0, or TRUNCATED / TRAILING for another length, BAD_VALUE for an
 * unknown kind or stream 0. */
int nsc_ack_decode(const void *buf, size_t len, nsc_ack *out);

/* Encoder over a caller-owned buffer. */
typedef struct nsc_enc {
    uint8_t *buf;
    size_t cap, len;
    size_t reserve;     /* bytes at the end only a counters record may use */
    size_t records_at;  /* offset of the records array header, patched at finish */
    uint32_t nrecords;
    uint64_t base_ns;
    uint64_t last_id;   /* delta base for event ids */
    uint32_t pid;       /* header pid: thread ids are sent relative to it */
    size_t counters_at; /* offset of the header's "counters" values,
                         * rewritten by each counters record */
} nsc_enc;

/* Begin a batch in buf[0..cap). Returns 0 or NSC_WIRE_FULL. */
int nsc_enc_begin(nsc_enc *e, void *buf, size_t cap, const nsc_batch_hdr *hdr);
/* Each add returns 0, or NSC_WIRE_FULL leaving the batch as it was, or
 * NSC_WIRE_BAD_VALUE (batch unchanged) for an event type >= NSC_T_COUNT or a
 * state >= NSC_S_COUNT. Texts are NUL-terminated; at most 63 bytes are sent. */
int nsc_enc_str(nsc_enc *e, const nsc_str_def *s);
int nsc_enc_ctx(nsc_enc *e, const nsc_ctx_def *c);
int nsc_enc_event(nsc_enc *e, const nsc_event *ev);
int nsc_enc_state(nsc_enc *e, const nsc_state_rec *s);
int nsc_enc_completion(nsc_enc *e, const nsc_completion *c);
int nsc_enc_counters(nsc_enc *e, const nsc_counters *c);
/* Keep the last n bytes of the buffer for the counters record that ends the
 * batch: every other record then sees a buffer n bytes shorter. Returns 0, or
 * NSC_WIRE_FULL (nothing changed) if fewer than n bytes are free. */
int nsc_enc_reserve(nsc_enc *e, size_t n);
/* Close the batch; returns its length in bytes. */
size_t nsc_enc_finish(nsc_enc *e);

/* Limits the decoder enforces before allocating. Zero fields take defaults. */
typedef struct nsc_dec_limits {
    size_t max_msg;      /* default NSC_WIRE_MAX_MSG */
    uint32_t max_records;/* default 1 << 20 */
} nsc_dec_limits;

/* A decoded batch; all arrays live in one allocation owned by the batch. */
typedef struct nsc_batch {
    nsc_batch_hdr hdr;
    nsc_event *events;
    size_t nevents;
    nsc_state_rec *states;
    size_t nstates;
    nsc_completion *completions;
    size_t ncompletions;
    nsc_str_def *strs;
    size_t nstrs;
    nsc_ctx_def *ctxs;
    size_t nctxs;
    nsc_counters counters;
    int has_counters;
    void *mem;
} nsc_batch;

/* Decode buf[0..len). On success fills *out (release with nsc_batch_release);
 * on error returns a negative nsc_wire_err, *out is left empty and nothing
 * needs releasing. lim may be NULL. */
int nsc_batch_decode(const void *buf, size_t len, const nsc_dec_limits *lim, nsc_batch *out);
void nsc_batch_release(nsc_batch *b);

/* Scanning: a batch validated whole, exactly as nsc_batch_decode validates it
 * (the same messages accepted, the same error for each rejected one), in one
 * pass that decodes only the records a reader needs: every string, context
 * and counters record, and the events keep_types or keep_flags select. The
 * other records are only checked and counted (their bytes are then spliced,
 * see below). The arrays belong to the scan, grow as needed and are reused
 * by the next scan: a steady stream of batches allocates nothing. */
typedef struct nsc_scan {
    uint32_t keep_types;  /* in: 1 << type for the event types to decode */
    uint8_t keep_flags;   /* in: also decode the events with one of these flags */
    uint8_t keep_states;  /* in: also decode every state and completion */
    nsc_batch b;          /* out: header, strs, ctxs, counters and the kept events,
                           * states and completions */
    uint32_t *event_at;   /* out: the record number of b.events[i] in the batch */
    size_t nevents, nstates, ncompletions;  /* out: the batch's records of each kind */
    size_t cap_events, cap_strs, cap_ctxs, cap_states, cap_completions;  /* room in the arrays */
} nsc_scan;

/* Scan buf[0..len) into s (keep_* set by the caller). Returns 0, or the
 * negative nsc_wire_err nsc_batch_decode would return for the message; on
 * error s->b holds nothing. lim may be NULL. */
int nsc_batch_scan(const void *buf, size_t len, const nsc_dec_limits *lim, nsc_scan *s);
void nsc_scan_free(nsc_scan *s);

/* msgpack primitives, shared with the other codecs of common/ (a2c.c) so the
 * byte format is written and read in one place. Writers do no bounds checks:
 * the caller reserves 9 bytes plus the payload (texts: at most 63 bytes are
 * written). Readers consume one value from a bounded cursor and return the
 * nsc_wire_err codes above (TOO_MANY: a length over max_len or max_elems). */
typedef struct nsc_mp_cursor {
    const uint8_t *p, *end;
    size_t max_len;       /* longest str/bin/ext accepted */
    uint32_t max_elems;   /* longest array/map accepted */
} nsc_mp_cursor;

uint8_t *nsc_mp_put_uint(uint8_t *p, uint64_t v);
uint8_t *nsc_mp_put_int(uint8_t *p, int64_t v);
uint8_t *nsc_mp_put_array(uint8_t *p, uint32_t n);
uint8_t *nsc_mp_put_text(uint8_t *p, const char *s);
uint8_t *nsc_mp_put_bin(uint8_t *p, const void *data, uint32_t n);
int nsc_mp_rd_uint(nsc_mp_cursor *c, uint64_t max, uint64_t *v);
int nsc_mp_rd_sint(nsc_mp_cursor *c, int64_t min, int64_t max, int64_t *v);
int nsc_mp_rd_array(nsc_mp_cursor *c, uint32_t *n);
int nsc_mp_rd_text(nsc_mp_cursor *c, char dst[64]);  /* <= 63 bytes, no NUL */
int nsc_mp_rd_bin(nsc_mp_cursor *c, const uint8_t **data, uint32_t *n);

/* Splicing: the records of a batch appended to another batch's encoder, in
 * their order, without decoding them into structs. Only the fields that are
 * deltas across records (ids, the times based on base_ns, pids) are read and
 * written again from the encoder's bases; every other field is copied byte for
 * byte. For a batch nsc_batch_decode accepted (what validates it: the
 * splicer checks only what it reads, and never reads out of bounds). */
typedef struct nsc_splice {
    nsc_mp_cursor c;    /* at the next record */
    uint32_t left;      /* records not yet taken */
    uint64_t base_ns, last_id;
    uint32_t pid;
    unsigned tag;       /* of the record last taken */
    uint64_t counters[NSC_WIRE_HDR_COUNTERS];  /* the source header's, for its counters */
} nsc_splice;

/* Start at buf's first record. Returns 0 or a negative nsc_wire_err. */
int nsc_splice_begin(nsc_splice *s, const void *buf, size_t len);
/* The next record's tag (an event type or NSC_WIRE_TAG_*), -1 at the end. */
int nsc_splice_tag(const nsc_splice *s);
/* Take the next record, appended to e (NULL: stepped over). Returns 0, or
 * NSC_WIRE_FULL with e and s unchanged (grow the buffer, call again), or the
 * error that makes the rest of the batch unreadable. */
int nsc_splice_copy(nsc_splice *s, nsc_enc *e);

#endif
