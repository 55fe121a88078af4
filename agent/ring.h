/* ring.h: the agent's detail ring (detail = on-demand).
 *
 * Owns an LMDB environment of its own (the spool directory's "detail"
 * subdirectory) with one database, "pieces": an 8-byte big-endian piece
 * number, dense and rising, -> a piece header (the batch sequence the piece
 * was taken from, the process and job, the agent-clock span its records were
 * received in, the event types it holds) and one raw section (a wire-format
 * batch). It is bounded by bytes and by age: a put first drops the oldest
 * pieces that would take it over either bound, and every piece dropped or
 * refused is counted. The ring is detail that may be lost, not a spool:
 * it never syncs (no put waits for the disk), so an agent's ingest never
 * waits on it. A scan visits the pieces of a window in piece order with
 * bounded work per call, so a fetch is answered a chunk per loop turn.
 */
#ifndef NCCLSCOPE_AGENT_RING_H
#define NCCLSCOPE_AGENT_RING_H

#include <stddef.h>
#include <stdint.h>

typedef struct nsc_ring nsc_ring;

/* What a piece holds besides its section. */
typedef struct nsc_ring_meta {
    uint64_t seq;             /* the a2c batch it was taken from */
    uint64_t from_ns, to_ns;  /* agent clock: its records arrived within this span */
    uint64_t types;           /* bit (1 << event type) per event type it holds */
    uint32_t pid;
    char job[64];
} nsc_ring_meta;

typedef struct nsc_ring_piece {
    nsc_ring_meta m;
    const uint8_t *data;
    uint32_t len;
} nsc_ring_piece;

typedef struct nsc_ring_stats {
    uint64_t cap_bytes, keep_ns;
    uint64_t pieces, bytes;              /* held now */
    uint64_t held_from_ns, held_to_ns;   /* the oldest piece's from_ns, the newest's to_ns; 0 empty */
    uint64_t put_pieces, put_bytes;      /* kept, ever */
    uint64_t dropped_pieces, dropped_bytes;  /* kept, then dropped for a newer piece (size) or age */
    uint64_t refused_pieces, refused_bytes;  /* never kept: larger than the ring, older than keep_ns, or LMDB failed */
    uint64_t errors;                     /* LMDB failures */
} nsc_ring_stats;

/* Open (creating) the ring in dir, emptied: what a previous run kept
 * would be counted nowhere. Returns 0 or -1 with a message in err. */
int nsc_ring_open(nsc_ring **out, const char *dir, uint64_t cap_bytes, uint64_t keep_ns, char err[128]);
void nsc_ring_close(nsc_ring *r);
/* Keep n pieces, dropping the oldest for room and those whose to_ns is
 * older than now_ns - keep_ns. Returns the pieces kept (the others are
 * counted as refused). */
size_t nsc_ring_put(nsc_ring *r, const nsc_ring_piece *p, size_t n, uint64_t now_ns);
/* Drop what is older than now_ns - keep_ns (also done by every put). */
void nsc_ring_age(nsc_ring *r, uint64_t now_ns);
void nsc_ring_stats_get(const nsc_ring *r, nsc_ring_stats *st);

/* A window: pieces of job with to_ns >= from_ns and from_ns <= to_ns,
 * of one of pids (npids 0: any), holding one of types (0: any; a piece with
 * no event, only states, strings or counters, always matches). */
typedef struct nsc_ring_query {
    const char *job;
    uint64_t from_ns, to_ns, types;
    const uint32_t *pids;
    uint32_t npids;
} nsc_ring_query;

/* Called per matching piece; data is valid during the call only. */
typedef void nsc_ring_fn(void *arg, const nsc_ring_meta *m, const uint8_t *data, uint32_t len);

/* Visit the matching pieces numbered *at and on, until about max_bytes of
 * them or max_seen pieces looked at, and never between two matching pieces
 * of one batch seq; *at moves past the last looked at.
 * Returns 0 when no piece is left to look at, 1 when some are, -1 when
 * the ring cannot be read. */
int nsc_ring_scan(nsc_ring *r, const nsc_ring_query *q, uint64_t *at, size_t max_bytes, uint32_t max_seen,
                  nsc_ring_fn *fn, void *arg);

#endif
