/* test_uclock.c: the collector's UDP clock port (collector/uclock.c) over
 * real UDP on loopback: a probe comes back with its id and token and the
 * collector's receive and reply times, as large as it went; a datagram that
 * is no request is counted and never answered; clock_udp's forms ("listen",
 * ADDR:PORT, "off", CURVE on); and stop ends the thread. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "uclock.h"
#include "uprobe.h"

static nsc_collector c;

static void setup(void)
{
    memset(&c, 0, sizeof c);
    cr_assert_eq(nsc_stats_init(&c.stats), 0);
    strcpy(c.cfg.listen, "tcp://127.0.0.1:0");
    strcpy(c.cfg.clock_udp, "listen");
}

static void teardown(void) { nsc_stats_free(&c.stats); }

TestSuite(uclock, .init = setup, .fini = teardown, .timeout = 60);

/* A socket connected to the collector's clock port. */
static int client(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c.udp_port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    cr_assert_geq(fd, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* The next datagram on fd (10 s at most): its length, into buf. */
static ssize_t next(int fd, uint8_t *buf, size_t cap)
{
    struct pollfd p = {fd, POLLIN, 0};
    cr_assert_eq(poll(&p, 1, 10000), 1, "an answer comes");
    return recv(fd, buf, cap, 0);
}

Test(uclock, probe_answered_with_id_token_and_times)
{
    nsc_uclock *u;
    cr_assert_eq(nsc_uclock_start(&c, &u), 0);
    cr_assert_not_null(u);
    cr_assert_gt(c.udp_port, 0, "'listen': listen's address, a port picked");
    int fd = client();
    uint8_t req[NSC_UPROBE_LEN], ans[NSC_UPROBE_LEN + 1];
    nsc_uprobe q = {.kind = NSC_UPROBE_REQUEST, .id = 42, .token = 0xfeedfacecafebeefull}, a;
    nsc_uprobe_encode(&q, req);
    uint64_t before = nsc_mono_ns();
    cr_assert_eq(send(fd, req, sizeof req, 0), (ssize_t)sizeof req);
    ssize_t n = next(fd, ans, sizeof ans);
    uint64_t after = nsc_mono_ns();
    cr_assert_eq(n, (ssize_t)sizeof req, "the answer is as large as the request");
    cr_assert_eq(nsc_uprobe_decode(ans, (size_t)n, NSC_UPROBE_ANSWER, &a), NSC_UPROBE_OK);
    cr_assert_eq(a.id, 42);
    cr_assert_eq(a.token, q.token);
    cr_assert(before <= a.t2 && a.t2 <= a.t3 && a.t3 <= after, "the collector's clock, this machine's");
    nsc_uclock_stop(u);  /* the thread's counts are all in */
    cr_assert_eq(atomic_load(&c.stats.udp_answers), 1);
    close(fd);
}

/* Too short, too long, an answer reflected at the port, a request with
 * times: none is answered (the valid request sent after them is the first
 * answer to come back), each is counted. */
Test(uclock, malformed_datagrams_counted_not_answered)
{
    nsc_uclock *u;
    cr_assert_eq(nsc_uclock_start(&c, &u), 0);
    int fd = client();
    uint8_t req[NSC_UPROBE_LEN + 1] = {0}, bad[NSC_UPROBE_LEN + 1], ans[NSC_UPROBE_LEN + 1];
    nsc_uprobe q = {.kind = NSC_UPROBE_REQUEST, .id = 7, .token = 9}, a;
    nsc_uprobe_encode(&q, req);
    memcpy(bad, req, sizeof bad);
    cr_assert_eq(send(fd, bad, NSC_UPROBE_LEN - 1, 0), NSC_UPROBE_LEN - 1);
    cr_assert_eq(send(fd, bad, NSC_UPROBE_LEN + 1, 0), NSC_UPROBE_LEN + 1);
    bad[5] = NSC_UPROBE_ANSWER;
    cr_assert_eq(send(fd, bad, NSC_UPROBE_LEN, 0), NSC_UPROBE_LEN);
    bad[5] = NSC_UPROBE_REQUEST;
    bad[30] = 1;
    cr_assert_eq(send(fd, bad, NSC_UPROBE_LEN, 0), NSC_UPROBE_LEN);
    cr_assert_eq(send(fd, req, NSC_UPROBE_LEN, 0), NSC_UPROBE_LEN);
    ssize_t n = next(fd, ans, sizeof ans);
    cr_assert_eq(nsc_uprobe_decode(ans, (size_t)n, NSC_UPROBE_ANSWER, &a), NSC_UPROBE_OK);
    cr_assert_eq(a.id, 7, "the first answer is the valid request's");
    nsc_uclock_stop(u);
    cr_assert_eq(atomic_load(&c.stats.udp_malformed), 4);
    cr_assert_eq(atomic_load(&c.stats.udp_answers), 1);
    close(fd);
}

/* off, CURVE on (probes stay on the authenticated link), a listen address
 * that is no number (an interface name): no port, no thread, no error. A
 * clock_udp that is not ADDR:PORT, or not a numeric address, is an error. */
Test(uclock, off_forms_and_bad_settings)
{
    nsc_uclock *u = (nsc_uclock *)&c;
    strcpy(c.cfg.clock_udp, "off");
    cr_assert_eq(nsc_uclock_start(&c, &u), 0);
    cr_assert_null(u);
    strcpy(c.cfg.clock_udp, "127.0.0.1:0");
    strcpy(c.cfg.curve_secret_file, "/nonexistent/secret");
    cr_assert_eq(nsc_uclock_start(&c, &u), 0);
    cr_assert_null(u);
    cr_assert_eq(c.udp_port, 0);
    c.cfg.curve_secret_file[0] = 0;
    strcpy(c.cfg.clock_udp, "listen");
    strcpy(c.cfg.listen, "tcp://eth0:7760");
    cr_assert_eq(nsc_uclock_start(&c, &u), 0);
    cr_assert_null(u);
    const char *bad[] = {"7760", "localhost:7760", "127.0.0.1:x", "127.0.0.1:", "127.0.0.1:65536", "[::1:5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        strcpy(c.cfg.clock_udp, bad[i]);
        cr_assert_eq(nsc_uclock_start(&c, &u), -1, "%s", bad[i]);
        cr_assert_null(u);
        cr_assert_eq(c.udp_port, 0);
    }
    strcpy(c.cfg.clock_udp, "127.0.0.1:0");
    cr_assert_eq(nsc_uclock_start(&c, &u), 0);
    cr_assert_gt(c.udp_port, 0);
    nsc_uclock_stop(u);
}

/* Stop ends the thread blocked in recvfrom; the port is free again after. */
Test(uclock, stop_ends_the_thread)
{
    nsc_uclock *u;
    strcpy(c.cfg.clock_udp, "127.0.0.1:0");
    cr_assert_eq(nsc_uclock_start(&c, &u), 0);
    char again[32];
    snprintf(again, sizeof again, "127.0.0.1:%d", c.udp_port);
    nsc_uclock_stop(u);
    strcpy(c.cfg.clock_udp, again);
    cr_assert_eq(nsc_uclock_start(&c, &u), 0, "the port was released");
    nsc_uclock_stop(u);
    nsc_uclock_stop(NULL);
}
