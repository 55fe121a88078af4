/* reply.c: the answers every endpoint shares (see reply.h). */
#include "reply.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdlib.h>

#include "collector.h"
#include "json.h"

void nsc_http_json_error(struct evhttp_request *req, int code, const char *reason, const char *msg)
{
    struct evbuffer *b = evbuffer_new();
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f) {
        fputs("{\"error\":", f);
        nsc_json_write_str(f, msg);
        fputs("}\n", f);
        fclose(f);
    }
    if (b && text)
        evbuffer_add(b, text, len);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, code, reason, b);
    free(text);
    if (b)
        evbuffer_free(b);
}

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
