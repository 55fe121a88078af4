/* chparts.h: what a collector storing into ClickHouse holds.
 *
 * Owns the handle of what such a collector holds besides the collector's
 * own state: the store (chstore.h: connections, rows waiting for their
 * insert), the query cache (chcache.h: the jobs queries read, kept) and the
 * live state shared with the other collectors (chlive.h). The ClickHouse
 * parts that need more than one of them take this handle; the store's
 * operations (chback.h) set it up and call those parts, so the handle
 * lives apart from them. No LMDB store of its own: the query cache's
 * stores are per job, in <db>/tmp.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHPARTS_H
#define NCCLSCOPE_COLLECTOR_CHPARTS_H

#include "chstore.h"

struct nsc_collector;
struct nsc_chcache;
struct nsc_chlive;

typedef struct nsc_chback {
    struct nsc_collector *c;
    nsc_chstore *ch;
    struct nsc_chcache *cache;
    struct nsc_chlive *live;     /* set while its thread runs (chlive.h) */
} nsc_chback;

#endif
