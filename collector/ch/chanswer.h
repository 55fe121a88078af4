/* chanswer.h: one request to a ClickHouse server and its answer.
 *
 * Owns the read side's transport (docs/clickhouse.md, "Queries"): a POST
 * over libcurl with its own handle (any thread may call it), its answer
 * streamed into a file, or into memory for small ones; an answer of the
 * read path fetched into an unlinked file of a given folder and read
 * through a map (never held in memory), with the readers of its RowBinary
 * values; and the quoting of a string into SQL. What the SELECTs are and how
 * their rows become a store is chread.h's. Errors are NSC_QUERY_ESTORE with
 * err set.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHANSWER_H
#define NCCLSCOPE_COLLECTOR_CHANSWER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bytes.h"
#include "chconn.h"

/* A request to ClickHouse that gets no byte for this long fails. */
#define NSC_CHANSWER_SILENT_S 120

/* An answer mapped from its unlinked file; nsc_chanswer_free releases it. */
typedef struct nsc_chanswer {
    uint8_t *map;
    size_t len;
    nsc_rbuf r;  /* the next unread byte; bad once a value ran past the end */
} nsc_chanswer;

/* POST body (len bytes) to url (a server's http://HOST:PORT/, with
 * ?query=... where body is data), the answer into f: 0, or NSC_QUERY_ESTORE
 * with err set, reaching the server as conn says. max_s > 0: the whole
 * request fails after that many seconds. */
int nsc_chanswer_post(const nsc_chconn *conn, const char *url, const void *body, size_t len, long max_s,
                      const char *what, FILE *f, char *err, size_t errcap);

/* nsc_chanswer_post with the answer in memory: *ans (malloc'd,
 * NUL-terminated, *anslen bytes without the NUL) on success, NULL otherwise.
 * 0, or NSC_QUERY_ESTORE with err. For small answers only. */
int nsc_chanswer_post_text(const nsc_chconn *conn, const char *url, const void *body, size_t len, long max_s,
                           const char *what, char **ans, size_t *anslen, char *err, size_t errcap);

/* The name an answer's file starts with while it has one: between its
 * making and its unlinking; a collector killed then leaves it behind, for
 * the next one to remove (chcache.h). */
#define NSC_CHANSWER_PREFIX "answer-"

/* The answer of sql on server, in a file of tmpdir that is gone once a is
 * freed, into a (freed by the caller whatever this returns). */
int nsc_chanswer_fetch(const nsc_chconn *conn, const char *server, const char *tmpdir, const char *sql,
                       const char *what, nsc_chanswer *a, char *err, size_t errcap);
void nsc_chanswer_free(nsc_chanswer *a);

/* RowBinary values, each at a's next byte. A value past the end marks a bad
 * and reads as 0 (or NULL, or empty). */
uint64_t nsc_chanswer_le(nsc_chanswer *a, size_t width);
/* A String (LEB128 length, bytes): its bytes (in the map) and length. */
const uint8_t *nsc_chanswer_bytes(nsc_chanswer *a, size_t *len);
/* A String into a char[cap] as the batch had it: NUL-terminated where it
 * fits (the rows hold at most cap bytes, without the NUL). */
void nsc_chanswer_text(nsc_chanswer *a, char *out, size_t cap);
/* At the end of the answer, or past it. */
int nsc_chanswer_at_end(const nsc_chanswer *a);

/* s as an SQL string literal into out: quoted, ' and \ escaped. 0, or -1
 * when it does not fit in cap bytes. */
int nsc_chanswer_literal(const char *s, char *out, size_t cap);

#endif
