/* prom.c: Prometheus exposition lines (see prom.h). */
#include "prom.h"

#include <event2/buffer.h>
#include <inttypes.h>

void nsc_prom_head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void nsc_prom_u64(struct evbuffer *b, const char *name, const char *type, const char *help, uint64_t v)
{
    nsc_prom_head(b, name, type, help);
    evbuffer_add_printf(b, "%s %" PRIu64 "\n", name, v);
}
