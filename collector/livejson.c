/* livejson.c: the live state as JSON (see livejson.h). */
#include "livejson.h"

#include <stdlib.h>

typedef struct live_json {
    nsc_http_live_fn fn;
    FILE *f;
} live_json;

static int write_live_json(void *arg, const nsc_live *l, uint64_t now)
{
    live_json *j = arg;
    return j->fn(l, now, j->f);
}

char *nsc_http_live_json(nsc_collector *c, nsc_http_live_fn fn, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f)
        return NULL;
    live_json j = {fn, f};
    int rc = c->store.ops->live_read(c->store.h, write_live_json, &j);
    if (fclose(f) || rc) {
        free(text);
        return NULL;
    }
    return text;
}
