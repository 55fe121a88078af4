/* prom.h: the Prometheus text exposition lines the agent and the collector
 * write on /metrics: a family's HELP and TYPE, and a one-sample family.
 * Arguments always in the order name, type, help. */
#ifndef NSC_PROM_H
#define NSC_PROM_H

#include <stdint.h>

struct evbuffer;

/* "# HELP name help" and "# TYPE name type", each on its line. */
void nsc_prom_head(struct evbuffer *b, const char *name, const char *type, const char *help);

/* The head and one unlabelled sample "name v". */
void nsc_prom_u64(struct evbuffer *b, const char *name, const char *type, const char *help, uint64_t v);

#endif
