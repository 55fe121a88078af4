/* Unit tests for common/curve.c: generated key files (modes, contents, no
 * overwrite), loading with validation, a secret key others can read refused,
 * malformed key files, and keys that really work on a CURVE link. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "curve.h"

static char dir[64], prefix[128], pub[160], sec[160];

static void setup(void)
{
    strcpy(dir, "/tmp/nsc-curve-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(prefix, sizeof prefix, "%s/agent", dir);
    snprintf(pub, sizeof pub, "%s.pub", prefix);
    snprintf(sec, sizeof sec, "%s.key", prefix);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    chmod(path, mode);
}

TestSuite(curve, .init = setup, .fini = teardown);

Test(curve, generate_then_load)
{
    nsc_curve_pair made, loaded;
    char err[NSC_CURVE_ERR_MAX], key[NSC_CURVE_KEY_LEN + 1];
    cr_assert_eq(nsc_curve_generate(prefix, &made, err), 0, "%s", err);
    struct stat st;
    cr_assert_eq(stat(sec, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert_eq(stat(pub, &st), 0);
    cr_assert_eq(st.st_size, NSC_CURVE_KEY_LEN + 1);
    cr_assert_eq(nsc_curve_load_secret(sec, &loaded, err), 0, "%s", err);
    cr_assert_str_eq(loaded.secret_key, made.secret_key);
    cr_assert_str_eq(loaded.public_key, made.public_key, "public key derived from the secret one");
    cr_assert_eq(nsc_curve_load_public(pub, key, err), 0, "%s", err);
    cr_assert_str_eq(key, made.public_key);
    cr_assert_neq(nsc_curve_generate(prefix, &made, err), 0, "existing key files are not overwritten");
    cr_assert_not_null(strstr(err, "exists"), "%s", err);
}

Test(curve, secret_readable_by_others_refused)
{
    nsc_curve_pair p;
    char err[NSC_CURVE_ERR_MAX];
    cr_assert_eq(nsc_curve_generate(prefix, &p, err), 0, "%s", err);
    chmod(sec, 0640);
    cr_assert_neq(nsc_curve_load_secret(sec, &p, err), 0);
    cr_assert_not_null(strstr(err, "chmod 600"), "%s", err);
}

Test(curve, malformed_key_files)
{
    static const char *bad[] = {
        "",                                              /* empty */
        "short\n",                                       /* too short */
        "0123456789012345678901234567890123456789X\n",   /* 41 characters */
        "01234567890123456789012345678901234567\"~\n",   /* outside the Z85 alphabet */
        "0123456789012345678901234567890123456789\nmore\n", /* trailing text */
    };
    char err[NSC_CURVE_ERR_MAX], key[NSC_CURVE_KEY_LEN + 1];
    nsc_curve_pair p;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(pub, bad[i], 0600);
        cr_assert_neq(nsc_curve_load_public(pub, key, err), 0, "case %zu accepted", i);
        cr_assert_not_null(strstr(err, "not a CURVE key"), "case %zu: %s", i, err);
        cr_assert_neq(nsc_curve_load_secret(pub, &p, err), 0, "case %zu accepted as secret", i);
    }
    cr_assert_neq(nsc_curve_load_public("/nonexistent/key.pub", key, err), 0);
    cr_assert_not_null(strstr(err, "No such file"), "%s", err);
    cr_assert(nsc_curve_key_valid("0123456789012345678901234567890123456789", 40), "40 Z85 digits are a key");
}

/* Keys from files authenticate a real CURVE connection; a wrong server key does not. */
static int exchange(const nsc_curve_pair *server, const nsc_curve_pair *client, const char *server_pub)
{
    void *ctx = zmq_ctx_new(), *srv = zmq_socket(ctx, ZMQ_ROUTER), *cli = zmq_socket(ctx, ZMQ_DEALER);
    int one = 1, linger = 0, got = 0;
    char ep[64];
    size_t eplen = sizeof ep;
    zmq_setsockopt(srv, ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt(srv, ZMQ_CURVE_SECRETKEY, server->secret_key, NSC_CURVE_KEY_LEN);
    zmq_setsockopt(srv, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(cli, ZMQ_LINGER, &linger, sizeof linger);
    cr_assert_eq(zmq_bind(srv, "tcp://127.0.0.1:*"), 0);
    zmq_getsockopt(srv, ZMQ_LAST_ENDPOINT, ep, &eplen);
    zmq_setsockopt(cli, ZMQ_CURVE_SERVERKEY, server_pub, NSC_CURVE_KEY_LEN);
    zmq_setsockopt(cli, ZMQ_CURVE_PUBLICKEY, client->public_key, NSC_CURVE_KEY_LEN);
    zmq_setsockopt(cli, ZMQ_CURVE_SECRETKEY, client->secret_key, NSC_CURVE_KEY_LEN);
    cr_assert_eq(zmq_connect(cli, ep), 0);
    zmq_send(cli, "hello", 5, 0);
    zmq_pollitem_t it = {srv, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, 1000) == 1) {
        char id[256], body[16];
        zmq_recv(srv, id, sizeof id, 0);
        got = zmq_recv(srv, body, sizeof body, 0) == 5 && memcmp(body, "hello", 5) == 0;
    }
    zmq_close(cli);
    zmq_close(srv);
    zmq_ctx_term(ctx);
    return got;
}

Test(curve, keys_from_files_work_on_a_link)
{
    char sprefix[160], err[NSC_CURVE_ERR_MAX], spub[NSC_CURVE_KEY_LEN + 1];
    nsc_curve_pair server, client, other;
    snprintf(sprefix, sizeof sprefix, "%s/collector", dir);
    cr_assert_eq(nsc_curve_generate(sprefix, &server, err), 0, "%s", err);
    cr_assert_eq(nsc_curve_generate(prefix, &client, err), 0, "%s", err);
    snprintf(sprefix, sizeof sprefix, "%s/collector.pub", dir);
    cr_assert_eq(nsc_curve_load_public(sprefix, spub, err), 0, "%s", err);
    cr_assert_eq(nsc_curve_load_secret(sec, &client, err), 0, "%s", err);
    cr_assert(exchange(&server, &client, spub), "a message over CURVE with the loaded keys");
    snprintf(sprefix, sizeof sprefix, "%s/other", dir);
    cr_assert_eq(nsc_curve_generate(sprefix, &other, err), 0, "%s", err);
    cr_assert_not(exchange(&server, &client, other.public_key), "a wrong server key must not connect");
}
