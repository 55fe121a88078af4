/* chconn.c: the settings of every connection to ClickHouse (see chconn.h). */
#include "chconn.h"

#include <stdio.h>
#include <string.h>

#define CONNECT_TIMEOUT_MS 5000L

static int read_password(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    int ok = f && fgets(out, (int)cap, f);
    if (f)
        fclose(f);
    if (!ok) {
        fprintf(stderr, "ncclscope-collector: ch_password_file %s: cannot read\n", path);
        return -1;
    }
    out[strcspn(out, "\r\n")] = 0;
    if (!out[0]) {
        fprintf(stderr, "ncclscope-collector: ch_password_file %s: the first line is empty\n", path);
        return -1;
    }
    return 0;
}

int nsc_chconn_init(nsc_chconn *cc, const char *user, const char *password_file, int tls, const char *ca_file)
{
    memset(cc, 0, sizeof *cc);
    cc->tls = tls;
    if (strlen(user) >= sizeof cc->user || strlen(ca_file) >= sizeof cc->ca_file) {
        fprintf(stderr, "ncclscope-collector: ch_user or ch_ca_file too long\n");
        return -1;
    }
    if (password_file[0] && !user[0]) {
        fprintf(stderr, "ncclscope-collector: ch_password_file needs ch_user\n");
        return -1;
    }
    if (ca_file[0] && !tls) {
        fprintf(stderr, "ncclscope-collector: ch_ca_file needs ch_tls 1\n");
        return -1;
    }
    strcpy(cc->user, user);
    strcpy(cc->ca_file, ca_file);
    return password_file[0] ? read_password(password_file, cc->password, sizeof cc->password) : 0;
}

int nsc_chconn_server(const nsc_chconn *cc, const char *hostport, size_t len, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s://%.*s/", cc->tls ? "https" : "http", (int)len, hostport);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

void nsc_chconn_apply(const nsc_chconn *cc, CURL *h)
{
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    if (cc->user[0]) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, cc->user);
        curl_easy_setopt(h, CURLOPT_PASSWORD, cc->password);
    }
    if (cc->ca_file[0])
        curl_easy_setopt(h, CURLOPT_CAINFO, cc->ca_file);
}
