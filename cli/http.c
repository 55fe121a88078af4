/* http.c: a small blocking HTTP/1.1 client (see http.h). */
#include "http.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define RBUF 65536
#define MAX_HEADER 16384

int nsc_http_parse_url(const char *url, nsc_http_url *out, char *err, size_t errcap)
{
    memset(out, 0, sizeof *out);
    if (strncmp(url, "http://", 7) != 0) {
        snprintf(err, errcap, "collector URL must start with http:// (got '%s')", url);
        return -1;
    }
    const char *h = url + 7, *slash = strchr(h, '/');
    size_t hostport = slash ? (size_t)(slash - h) : strlen(h);
    const char *colon = memchr(h, ':', hostport);
    size_t hl = colon ? (size_t)(colon - h) : hostport;
    size_t pl = colon ? hostport - hl - 1 : 0;
    if (hl == 0 || hl >= sizeof out->host || (colon && (pl == 0 || pl >= sizeof out->port))) {
        snprintf(err, errcap, "bad collector URL '%s'", url);
        return -1;
    }
    memcpy(out->host, h, hl);
    if (colon)
        memcpy(out->port, colon + 1, pl);
    else
        strcpy(out->port, "80");
    for (const char *p = out->port; *p; p++)
        if (*p < '0' || *p > '9') {
            snprintf(err, errcap, "bad port in collector URL '%s'", url);
            return -1;
        }
    if (slash) {
        size_t bl = strlen(slash);
        while (bl && slash[bl - 1] == '/')
            bl--;
        if (bl >= sizeof out->base) {
            snprintf(err, errcap, "collector URL path too long");
            return -1;
        }
        memcpy(out->base, slash, bl);
    }
    return 0;
}

static int dial(const nsc_http_url *u, int timeout_ms, char *err, size_t errcap)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc != 0) {
        snprintf(err, errcap, "%s", gai_strerror(rc));
        return -1;
    }
    int fd = -1, last = ECONNREFUSED;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        last = errno;
        if (last == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int n = poll(&p, 1, timeout_ms > 0 ? timeout_ms : -1);
            socklen_t sl = sizeof last;
            if (n == 0)
                last = ETIMEDOUT;
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &last, &sl) != 0)
                last = errno;
            if (last == 0)
                break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        snprintf(err, errcap, "%s", strerror(last));
    return fd;
}

/* The connection's read side: a buffer over the socket. */
typedef struct conn {
    int fd, timeout_ms;
    char buf[RBUF];
    size_t off, len;
    char *err;
    size_t errcap;
} conn;

/* Read more into the buffer. 1: got bytes, 0: end of stream, -1: error. */
static int fill(conn *c)
{
    if (c->off > 0) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    if (c->len == sizeof c->buf) {
        snprintf(c->err, c->errcap, "response line too long");
        return -1;
    }
    for (;;) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int n = poll(&p, 1, c->timeout_ms > 0 ? c->timeout_ms : -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0) {
            snprintf(c->err, c->errcap, "timed out waiting for the collector");
            return -1;
        }
        ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r < 0) {
            snprintf(c->err, c->errcap, "%s", strerror(errno));
            return -1;
        }
        c->len += (size_t)r;
        return r > 0;
    }
}

/* One CRLF-terminated line (CR and LF removed), pointing into the buffer. */
static int read_line(conn *c, char **line)
{
    for (;;) {
        char *nl = memchr(c->buf + c->off, '\n', c->len - c->off);
        if (nl) {
            *line = c->buf + c->off;
            c->off = (size_t)(nl - c->buf) + 1;
            *nl = 0;
            if (nl > *line && nl[-1] == '\r')
                nl[-1] = 0;
            return 0;
        }
        int r = fill(c);
        if (r <= 0) {
            if (r == 0)
                snprintf(c->err, c->errcap, "connection closed in the response header");
            return -1;
        }
    }
}

typedef struct sink {
    int ok;  /* 2xx: to fn; else to errbody */
    nsc_http_body_fn fn;
    void *arg;
    char *errbody;
    size_t errcap, errlen;
} sink;

static int deliver(sink *s, const char *data, size_t len)
{
    if (s->ok)
        return s->fn(s->arg, data, len);
    if (s->errcap == 0)
        return 0;
    size_t room = s->errcap - 1 - s->errlen;
    size_t n = len < room ? len : room;
    memcpy(s->errbody + s->errlen, data, n);
    s->errlen += n;
    s->errbody[s->errlen] = 0;
    return 0;
}

/* Pass up to `want` body bytes (UINT64_MAX: until close) to the sink. */
static int pass_bytes(conn *c, sink *s, uint64_t want, int until_close)
{
    while (want > 0) {
        if (c->off == c->len) {
            c->off = c->len = 0;
            int r = fill(c);
            if (r < 0)
                return -1;
            if (r == 0) {
                if (until_close)
                    return 0;
                snprintf(c->err, c->errcap, "connection closed before the end of the body");
                return -1;
            }
        }
        size_t avail = c->len - c->off;
        size_t n = want < avail ? (size_t)want : avail;
        int rc = deliver(s, c->buf + c->off, n);
        c->off += n;
        want -= n;
        if (rc)
            return rc;
    }
    return 0;
}

static int pass_chunked(conn *c, sink *s)
{
    for (;;) {
        char *line, *end;
        if (read_line(c, &line) != 0)
            return -1;
        errno = 0;
        unsigned long long size = strtoull(line, &end, 16);
        if (end == line || errno || (*end && *end != ';' && *end != ' ')) {
            snprintf(c->err, c->errcap, "malformed chunk size in the response");
            return -1;
        }
        if (size == 0)
            return 0;  /* trailers are not read: Connection: close ends it */
        int rc = pass_bytes(c, s, size, 0);
        if (rc)
            return rc;
        if (read_line(c, &line) != 0)
            return -1;
        if (line[0]) {
            snprintf(c->err, c->errcap, "malformed chunk in the response");
            return -1;
        }
    }
}

static int send_all(int fd, const char *p, size_t n, int timeout_ms, char *err, size_t errcap)
{
    while (n > 0) {
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        if (poll(&pf, 1, timeout_ms > 0 ? timeout_ms : -1) == 0) {
            snprintf(err, errcap, "timed out sending the request");
            return -1;
        }
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (w < 0) {
            snprintf(err, errcap, "%s", strerror(errno));
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Status line and headers: framing of the body. */
static int read_head(conn *c, int *status, int *chunked, uint64_t *length, int *has_length)
{
    char *line;
    if (read_line(c, &line) != 0)
        return -1;
    if (sscanf(line, "HTTP/1.%*d %d", status) != 1) {
        snprintf(c->err, c->errcap, "not an HTTP response");
        return -1;
    }
    for (size_t total = 0;;) {
        if (read_line(c, &line) != 0)
            return -1;
        if (!line[0])
            return 0;
        total += strlen(line);
        if (total > MAX_HEADER) {
            snprintf(c->err, c->errcap, "response header too large");
            return -1;
        }
        if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 && strcasestr(line + 18, "chunked"))
            *chunked = 1;
        else if (strncasecmp(line, "Content-Length:", 15) == 0) {
            char *end;
            *length = strtoull(line + 15, &end, 10);
            *has_length = 1;
        }
    }
}

int nsc_http_get(const nsc_http_req *req, int *status, nsc_http_body_fn fn, void *arg,
                 char *errbody, size_t errbody_cap, char *err, size_t errcap)
{
    if (errbody_cap)
        errbody[0] = 0;
    int fd = dial(req->url, req->timeout_ms, err, errcap);
    if (fd < 0)
        return -1;
    conn *c = malloc(sizeof *c);
    if (!c) {
        close(fd);
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    c->fd = fd;
    c->timeout_ms = req->timeout_ms;
    c->off = c->len = 0;
    c->err = err;
    c->errcap = errcap;
    char head[2048];
    int n = snprintf(head, sizeof head,
                     "GET %s%s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: ncclscope\r\n"
                     "Accept: */*\r\n%s%s%sConnection: close\r\n\r\n",
                     req->url->base, req->path, req->url->host, req->url->port,
                     req->token ? "Authorization: Bearer " : "", req->token ? req->token : "",
                     req->token ? "\r\n" : "");
    int rc = -1;
    if (n < 0 || (size_t)n >= sizeof head)
        snprintf(err, errcap, "request too long");
    else if (send_all(fd, head, (size_t)n, req->timeout_ms, err, errcap) == 0) {
        int chunked = 0, has_length = 0;
        uint64_t length = 0;
        if (read_head(c, status, &chunked, &length, &has_length) == 0) {
            sink s = {*status >= 200 && *status < 300, fn, arg, errbody, errbody_cap, 0};
            if (chunked)
                rc = pass_chunked(c, &s);
            else
                rc = pass_bytes(c, &s, has_length ? length : UINT64_MAX, !has_length);
        }
    }
    free(c);
    close(fd);
    return rc;
}
