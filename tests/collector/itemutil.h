/* itemutil.h: an agent batch made the collector's item, as the ingest
 * thread makes it (for the tests that feed the writer's parts). */
#ifndef NCCLSCOPE_TEST_ITEMUTIL_H
#define NCCLSCOPE_TEST_ITEMUTIL_H

#include "item.h"

/* b encoded and decoded by nsc_item_batch (no limits, 1024 ranks): the
 * item, or NULL with *reason set. */
nsc_item *nsc_test_item(const nsc_a2c_batch *b, unsigned *reason);

#endif
