/* chback.h: the collector's store in ClickHouse (cstore.h, --store clickhouse://).
 *
 * Owns the store's operations (nsc_chback_open, declared in cstore.h beside
 * the LMDB store's): they make the handle (chparts.h) and drive the
 * ClickHouse parts through it.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHBACK_H
#define NCCLSCOPE_COLLECTOR_CHBACK_H

#include "chparts.h"

#endif
