/* itemutil.c: an agent batch made the collector's item (see itemutil.h). */
#include "itemutil.h"

#include <stdlib.h>
#include <string.h>

nsc_item *nsc_test_item(const nsc_a2c_batch *b, unsigned *reason)
{
    static uint8_t msg[1 << 16];
    size_t len = nsc_a2c_encode_batch(b, msg);
    zmq_msg_t body;
    if (zmq_msg_init_size(&body, len))
        return NULL;
    memcpy(zmq_msg_data(&body), msg, len);
    char agent[64];
    uint64_t applied = 0, unplaced = 0;
    nsc_item *it = nsc_item_batch(&body, NULL, 1024, reason, agent, &applied, &unplaced);
    zmq_msg_close(&body);
    return it;
}
