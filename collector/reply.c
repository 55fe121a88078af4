/* reply.c: the answers every endpoint shares (see reply.h). */
#include "reply.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>

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
