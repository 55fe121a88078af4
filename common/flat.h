/* flat.h: the fast path of the NDJSON reader, for shallow JSON objects.
 *
 * Owns a one-pass scanner for the lines the timeline writes (docs/api.md): an
 * object whose values are strings, integers, true, false, null, arrays and
 * objects, nested at most NSC_FLAT_DEPTH containers deep (the root included:
 * an event's "states":[{...}] and a header's "ranks":[{...}] are three), with
 * no whitespace, no escapes and only printable ASCII. It builds the very
 * nsc_json tree the generic reader (json.h) builds for the same line, in
 * scratch memory that is reused from line to line. It declines everything
 * else (deeper nesting, reals, escapes, any surprise) and the caller gives
 * that line to nsc_json_parse, which reads it or reports the error with its
 * offset. So the scanner never accepts a line the generic reader rejects, nor
 * reads a line differently (tests/fuzz/fuzz_flat.c checks both on arbitrary
 * input).
 */
#ifndef NCCLSCOPE_FLAT_H
#define NCCLSCOPE_FLAT_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"

typedef struct nsc_flat {
    nsc_json *nodes;
    uint32_t nnodes;
    size_t cap;
    char *text;  /* a copy of the line; strings end where their closing quote was */
    size_t text_cap;
} nsc_flat;

/* Far below the generic reader's depth limit, so that limit never differs. */
#define NSC_FLAT_DEPTH 3

enum { NSC_FLAT_OK = 0, NSC_FLAT_DECLINED = 1, NSC_FLAT_NOMEM = -1 };

/* Scan one line (no '\n'). NSC_FLAT_OK: *root is its object, valid until the
 * next scan or nsc_flat_free; NSC_FLAT_DECLINED: not a flat object, use the
 * generic reader; NSC_FLAT_NOMEM: out of memory. */
int nsc_flat_scan(nsc_flat *f, const char *line, size_t len, const nsc_json **root);
void nsc_flat_free(nsc_flat *f);

#endif
