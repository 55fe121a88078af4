/* Unit tests for the collector's configuration (common/cfg.c through
 * collector/config.c): flags > environment > config file > defaults, units
 * of sizes and durations, and rejected input with its message. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static char path[64];
static char errtext[512];

static void write_conf(const char *text)
{
    strcpy(path, "/tmp/nsc-coll-conf-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static int load(nsc_coll_cfg *c, int argc, char **argv)
{
    FILE *err = fmemopen(errtext, sizeof errtext, "w");
    cr_assert(err);
    memset(errtext, 0, sizeof errtext);
    int rc = nsc_coll_cfg_load(c, argc, argv, err);
    fclose(err);
    return rc;
}

static void clear_env(void)
{
    unsetenv("NCCLSCOPE_COLLECTOR_CONFIG");
    unsetenv("NCCLSCOPE_CREDIT");
    unsetenv("NCCLSCOPE_DB");
    unsetenv("NCCLSCOPE_HANG_MS");
}

Test(collector_config, priority)
{
    nsc_coll_cfg c;
    clear_env();
    write_conf("# comment\n\n db = /tmp/from-file \ncredit=5\nhang_ms = 7\ngroup_max = 9\n");
    char *defaults[] = {"collector"};
    cr_assert_eq(load(&c, 1, defaults), 0);
    cr_assert_eq(c.credit, 32);
    cr_assert_str_eq(c.db, "/var/lib/ncclscope/db");
    cr_assert_eq(c.heartbeat_timeout_ms, 15000);

    char *file_only[] = {"collector", "--config", path};
    cr_assert_eq(load(&c, 3, file_only), 0);
    cr_assert_str_eq(c.db, "/tmp/from-file");
    cr_assert_eq(c.credit, 5);
    cr_assert_eq(c.hang_ms, 7);
    cr_assert_eq(c.group_max, 9);
    cr_assert_eq(c.live_interval_ms, 1000);  /* default */

    /* The file named by the environment, the environment over the file. */
    setenv("NCCLSCOPE_COLLECTOR_CONFIG", path, 1);
    setenv("NCCLSCOPE_CREDIT", "6", 1);
    char *none[] = {"collector"};
    cr_assert_eq(load(&c, 1, none), 0);
    cr_assert_eq(c.credit, 6);
    cr_assert_str_eq(c.db, "/tmp/from-file");

    /* Flags over both, in any position relative to --config. */
    char *flags[] = {"collector", "--credit", "8", "--config", path, "--db", "/tmp/flag"};
    cr_assert_eq(load(&c, 7, flags), 0);
    cr_assert_eq(c.credit, 8);
    cr_assert_str_eq(c.db, "/tmp/flag");
    cr_assert_eq(c.hang_ms, 7);
    clear_env();
    unlink(path);
}

Test(collector_config, units)
{
    nsc_coll_cfg c;
    clear_env();
    char *units[] = {"collector", "--hang-ms", "2s", "--map-max-mb", "1G", "--retain-age-s", "2h",
                     "--max-msg-mb", "32MiB", "--live-interval-ms", "250ms", "--heartbeat-timeout-ms", "1m"};
    cr_assert_eq(load(&c, 13, units), 0);
    cr_assert_eq(c.hang_ms, 2000);
    cr_assert_eq(c.map_max_mb, 1024);
    cr_assert_eq(c.retain_age_s, 7200);
    cr_assert_eq(c.max_msg_mb, 32);
    cr_assert_eq(c.live_interval_ms, 250);
    cr_assert_eq(c.heartbeat_timeout_ms, 60000);
}

static void rejected(int argc, char **argv, const char *message)
{
    nsc_coll_cfg c;
    cr_assert_eq(load(&c, argc, argv), -1, "accepted %s %s", argv[1], argc > 2 ? argv[2] : "");
    cr_assert(strstr(errtext, message), "'%s' does not say '%s'", errtext, message);
    cr_assert(strncmp(errtext, "ncclscope-collector: ", 21) == 0);
}

Test(collector_config, rejects)
{
    clear_env();
    rejected(3, (char *[]){"c", "--no-such-option", "1"}, "unknown option '--no-such-option'");
    rejected(2, (char *[]){"c", "--credit"}, "--credit needs a value");
    rejected(3, (char *[]){"c", "--credit", "12x"}, "credit wants a number, got '12x'");
    rejected(3, (char *[]){"c", "--credit", "-1"}, "credit wants a number");
    rejected(3, (char *[]){"c", "--credit", ""}, "credit wants a number");
    rejected(3, (char *[]){"c", "--credit", "99999999999999999999999"}, "credit wants a number");
    rejected(3, (char *[]){"c", "--credit", "0"}, "out of range");
    rejected(3, (char *[]){"c", "--hang-ms", "5 parsecs"}, "hang_ms has an unknown unit");
    rejected(3, (char *[]){"c", "--retain-age-s", "1500ms"}, "not a whole number of the key's unit");
    rejected(3, (char *[]){"c", "--map-max-mb", "512K"}, "not a whole number of the key's unit");
    rejected(3, (char *[]){"c", "--map-max-mb", "99999999999T"}, "map_max_mb is too large");
    rejected(5, (char *[]){"c", "--map-initial-mb", "2048", "--map-max-mb", "1G"}, "out of range");
    rejected(3, (char *[]){"c", "--ch-tls", "2"}, "ch_tls (0 or 1)");
    char longdb[5000];
    memset(longdb, 'x', sizeof longdb - 1);
    longdb[sizeof longdb - 1] = 0;
    rejected(3, (char *[]){"c", "--db", longdb}, "db is too long");
    setenv("NCCLSCOPE_CREDIT", "lots", 1);
    rejected(1, (char *[]){"c"}, "NCCLSCOPE_CREDIT: credit wants a number");
    unsetenv("NCCLSCOPE_CREDIT");

    write_conf("db /no/equals\n");
    rejected(3, (char *[]){"c", "--config", path}, ":1: expected 'key = value'");
    unlink(path);
    write_conf("\n# fine\ncolour = blue\n");
    rejected(3, (char *[]){"c", "--config", path}, ":3: unknown key 'colour'");
    unlink(path);
    write_conf("credit = 3\ngroup_max = many\n");
    rejected(3, (char *[]){"c", "--config", path}, ":2: group_max wants a number, got 'many'");
    unlink(path);
    rejected(3, (char *[]){"c", "--config", "/nonexistent/c.conf"}, "config /nonexistent/c.conf: No such file");
    setenv("NCCLSCOPE_COLLECTOR_CONFIG", "/nonexistent/env.conf", 1);
    rejected(1, (char *[]){"c"}, "config /nonexistent/env.conf");
    unsetenv("NCCLSCOPE_COLLECTOR_CONFIG");
}

/* The HTTP limits (common/hguard.h): defaults, units, and out-of-range values
 * refused with their names. */
Test(collector_config, http_limits)
{
    nsc_coll_cfg c;
    clear_env();
    char *defaults[] = {"collector"};
    cr_assert_eq(load(&c, 1, defaults), 0);
    cr_assert_eq(c.hg.max_body_kb, 64);
    cr_assert_eq(c.hg.max_headers_kb, 64);
    cr_assert_eq(c.hg.header_timeout_ms, 10000);
    cr_assert_eq(c.hg.write_timeout_ms, 30000);
    cr_assert_eq(c.hg.max_conns, 512);
    cr_assert_eq(c.hg.max_conns_per_client, 32);
    cr_assert_eq(c.hg.fd_reserve, 256);
    cr_assert_eq(c.hg.accept_backoff_ms, 1000);
    cr_assert_eq(c.http_sse_buffer_kb, 1024);
    char *units[] = {"collector", "--http-max-body-kb", "1M", "--http-header-timeout-ms", "2s"};
    cr_assert_eq(load(&c, 5, units), 0);
    cr_assert_eq(c.hg.max_body_kb, 1024);
    cr_assert_eq(c.hg.header_timeout_ms, 2000);
    char *zero[] = {"collector", "--http-max-conns", "0"};
    cr_assert_eq(load(&c, 3, zero), -1);
    cr_assert(strstr(errtext, "http_max_conns"), "%s", errtext);
    char *sse[] = {"collector", "--http-sse-buffer-kb", "0"};
    cr_assert_eq(load(&c, 3, sse), -1);
    cr_assert(strstr(errtext, "http_sse_buffer_kb"), "%s", errtext);
}

/* The webhook's settings: off by default; a URL needs http(s) and the
 * root-cause passes; the queue, retries, timeout and backoff in range. */
Test(collector_config, webhook)
{
    nsc_coll_cfg c;
    clear_env();
    char *defaults[] = {"collector"};
    cr_assert_eq(load(&c, 1, defaults), 0);
    cr_assert_str_empty(c.webhook_url);
    cr_assert_eq(c.webhook_queue, 256);
    cr_assert_eq(c.webhook_timeout_ms, 2000);
    cr_assert_eq(c.webhook_retries, 5);
    cr_assert_eq(c.webhook_backoff_ms, 500);
    cr_assert_eq(c.webhook_settle_ms, 3000);
    char *on[] = {"collector", "--webhook-url", "https://hooks.example/n", "--webhook-backoff-ms", "1s"};
    cr_assert_eq(load(&c, 5, on), 0);
    cr_assert_str_eq(c.webhook_url, "https://hooks.example/n");
    cr_assert_eq(c.webhook_backoff_ms, 1000);
    rejected(3, (char *[]){"c", "--webhook-url", "hooks.example/n"}, "webhook_url must start with http:// or https://");
    rejected(5, (char *[]){"c", "--webhook-url", "http://h/", "--rootcause-interval-ms", "0"},
             "webhook_url needs the root-cause passes");
    rejected(3, (char *[]){"c", "--webhook-queue", "0"}, "webhook_queue (1..65536)");
    rejected(3, (char *[]){"c", "--webhook-queue", "65537"}, "webhook_queue (1..65536)");
    rejected(3, (char *[]){"c", "--webhook-retries", "31"}, "webhook_retries (0..30)");
    rejected(3, (char *[]){"c", "--webhook-timeout-ms", "0"}, "webhook_timeout_ms");
}

/* detail (fetch before query): all by default, on-demand with its wait and
 * span, anything else refused by name. */
Test(collector_config, detail)
{
    nsc_coll_cfg c;
    clear_env();
    char *defaults[] = {"collector"};
    cr_assert_eq(load(&c, 1, defaults), 0);
    cr_assert_str_eq(c.detail, "all");
    cr_assert_eq(c.detail_wait_ms, 5000);
    cr_assert_eq(c.detail_span_ms, 10000);
    char *od[] = {"collector", "--detail", "on-demand", "--detail-wait-ms", "2s", "--detail-span-ms", "1m"};
    cr_assert_eq(load(&c, 7, od), 0);
    cr_assert_str_eq(c.detail, "on-demand");
    cr_assert_eq(c.detail_wait_ms, 2000);
    cr_assert_eq(c.detail_span_ms, 60000);
    rejected(3, (char *[]){"c", "--detail", "some"}, "detail must be all or on-demand, not 'some'");
}
