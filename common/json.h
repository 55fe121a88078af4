/* json.h: a small strict JSON reader and the string escaping used by our writers.
 *
 * Owns parsing of one JSON text into a read-only tree held by an nsc_json_doc.
 * The parser is iterative (an explicit stack bounded by limits.max_depth), checks
 * every size against the limits before it allocates, validates UTF-8 and escapes,
 * and reports the first error with its byte offset. Numbers keep their text, so
 * 64-bit integers (commHash, GPU timers) and fixed-point decimals read back exactly.
 *
 * Nodes are stored in pre-order in one array: a container's first child directly
 * follows it, and a node's next sibling is `node + node->span`.
 */
#ifndef NCCLSCOPE_JSON_H
#define NCCLSCOPE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum nsc_json_kind {
    NSC_JSON_NULL,
    NSC_JSON_FALSE,
    NSC_JSON_TRUE,
    NSC_JSON_NUMBER,
    NSC_JSON_STRING,
    NSC_JSON_ARRAY,
    NSC_JSON_OBJECT
} nsc_json_kind;

typedef struct nsc_json {
    nsc_json_kind kind;
    uint32_t count;   /* ARRAY/OBJECT: children; STRING: bytes; NUMBER: text length */
    uint32_t span;    /* nodes in this subtree, itself included */
    uint32_t key_len; /* member name length when the parent is an OBJECT */
    const char *key;  /* member name (NUL-terminated) or NULL */
    const char *text; /* STRING: decoded value; NUMBER: its literal; NUL-terminated */
} nsc_json;

typedef struct nsc_json_limits {
    size_t max_bytes;   /* input size */
    uint32_t max_depth; /* nesting of arrays and objects */
    uint32_t max_nodes; /* values in the document */
} nsc_json_limits;

/* Defaults: 64 MiB, depth 64, 4 Mi nodes. */
extern const nsc_json_limits nsc_json_default_limits;

typedef struct nsc_json_error {
    size_t offset; /* byte offset of the error in the input */
    char msg[64];  /* a fixed message, e.g. "bad escape" (see json.c) */
} nsc_json_error;

typedef struct nsc_json_doc {
    nsc_json *nodes; /* nodes[0] is the root */
    uint32_t nnodes;
    char *text;      /* decoded strings and number literals */
} nsc_json_doc;

/* Parse `len` bytes (no NUL needed). Returns 0 and fills *doc, or -1 and fills
 * *err; on error *doc holds nothing to free. limits may be NULL (defaults). */
int nsc_json_parse(const char *in, size_t len, const nsc_json_limits *limits, nsc_json_doc *doc,
                   nsc_json_error *err);
void nsc_json_free(nsc_json_doc *doc);

static inline const nsc_json *nsc_json_root(const nsc_json_doc *doc) { return &doc->nodes[0]; }

/* Children: first child (NULL if none) and next sibling within the same parent. */
const nsc_json *nsc_json_first(const nsc_json *container);
const nsc_json *nsc_json_next(const nsc_json *container, const nsc_json *child);
/* Member of an object by name (first match), or NULL. */
const nsc_json *nsc_json_get(const nsc_json *object, const char *key);
/* Element i of an array, or NULL. Linear in i. */
const nsc_json *nsc_json_at(const nsc_json *array, uint32_t i);

/* Typed reads: 0 on success, -1 if the node is missing (NULL), of another kind,
 * not an integer, or out of range. */
int nsc_json_u64(const nsc_json *n, uint64_t *out);
int nsc_json_i64(const nsc_json *n, int64_t *out);
int nsc_json_double(const nsc_json *n, double *out);
int nsc_json_bool(const nsc_json *n, bool *out);
/* A non-negative decimal scaled by 10^decimals, exactly: "12.345" with 3 gives
 * 12345. More fraction digits than `decimals`, exponents or overflow fail. */
int nsc_json_fixed(const nsc_json *n, unsigned decimals, uint64_t *out);
/* The string value, or NULL if n is not a string. */
const char *nsc_json_str(const nsc_json *n);
/* The string member key of obj, or dflt when it is missing or no string. */
const char *nsc_json_str_or(const nsc_json *obj, const char *key, const char *dflt);

/* The one JSON string escaper: s as a JSON string literal, quotes included,
 * handed to put in pieces (runs that need no escape in one piece). Quote and
 * backslash are escaped with a backslash, control characters as \u00XX, but
 * newline and tab as \n and \t where ctl is NSC_JSON_CTL_SHORT; the rest
 * passes unchanged. Both spellings are kept so that every output keeps the
 * bytes it always had: the stored-event queries (engine/query) spell every
 * control character \u00XX, the other writers (nsc_json_write_str) the short
 * forms. */
enum nsc_json_ctl { NSC_JSON_CTL_SHORT, NSC_JSON_CTL_UNICODE };
typedef void (*nsc_json_put_fn)(void *arg, const char *p, size_t n);
void nsc_json_escape(const char *s, enum nsc_json_ctl ctl, nsc_json_put_fn put, void *arg);

/* nsc_json_escape onto a stdio stream. */
void nsc_json_write_str(FILE *f, const char *s);

#endif
