/* chconn.h: how the collector reaches ClickHouse's HTTP interface.
 *
 * Owns the settings every libcurl handle to ClickHouse gets, the writer's
 * inserts and the queries' reads alike: the scheme (http, or https with
 * ch_tls), the user and password (HTTP basic authentication, which every
 * ClickHouse release takes; the password is read from a file so that it is
 * never on a command line or in the environment), the CA file that verifies
 * the servers' certificates, and the timeouts. One definition, so an insert
 * and a query never reach a server in two different ways.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHCONN_H
#define NCCLSCOPE_COLLECTOR_CHCONN_H

#include <limits.h>
#include <stddef.h>

#include <curl/curl.h>

#define NSC_CHCONN_SECRET_MAX 256

typedef struct nsc_chconn {
    int tls;                               /* https to every server */
    char user[64];                         /* empty: ClickHouse's default user */
    char password[NSC_CHCONN_SECRET_MAX];  /* the file's first line */
    char ca_file[PATH_MAX];                /* empty: the system's CA certificates */
} nsc_chconn;

/* Fill cc. password_file may be empty (no password); a password needs a
 * user. Returns 0, or -1 after printing why to stderr. */
int nsc_chconn_init(nsc_chconn *cc, const char *user, const char *password_file, int tls, const char *ca_file);

/* "http://HOST:PORT/" (or https) for hostport's first len bytes into out.
 * 0, or -1 when it does not fit. */
int nsc_chconn_server(const nsc_chconn *cc, const char *hostport, size_t len, char *out, size_t cap);

/* Credentials, CA and timeouts on h (a handle to one of the servers). */
void nsc_chconn_apply(const nsc_chconn *cc, CURL *h);

#endif
