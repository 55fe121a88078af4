/* Unit tests for the agent's configuration: the priority of flags over the
 * environment over the config file over defaults, derived defaults, and
 * rejected input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"

static char path[64];

static void write_conf(const char *text)
{
    strcpy(path, "/tmp/nsc-agent-conf-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static int load(nsc_agent_cfg *c, int argc, char **argv)
{
    FILE *err = fopen("/dev/null", "w");
    int rc = nsc_agent_cfg_load(c, argc, argv, err);
    fclose(err);
    return rc;
}

Test(config, priority)
{
    nsc_agent_cfg c;
    write_conf("# comment\n\n rundir = /tmp/from-file \nspool_max_mb=5\nhttp = off\nflush_ms = 7\n");
    unsetenv("NCCLSCOPE_SPOOL_MAX_MB");
    unsetenv("NCCLSCOPE_RUNDIR");
    unsetenv("NCCLSCOPE_SPOOL");
    char *file_only[] = {"agent", "--config", path};
    cr_assert_eq(load(&c, 3, file_only), 0);
    cr_assert_str_eq(c.rundir, "/tmp/from-file");
    cr_assert_str_eq(c.spool, "/tmp/from-file/spool");
    cr_assert_eq(c.spool_max_mb, 5);
    cr_assert_eq(c.flush_ms, 7);
    cr_assert_str_eq(c.http, "off");
    cr_assert_eq(c.pxn_hold_ms, 2000);  /* default */
    setenv("NCCLSCOPE_SPOOL_MAX_MB", "6", 1);
    cr_assert_eq(load(&c, 3, file_only), 0);
    cr_assert_eq(c.spool_max_mb, 6);
    char *with_flag[] = {"agent", "--spool-max-mb", "9", "--config", path, "--spool", "/tmp/s"};
    cr_assert_eq(load(&c, 7, with_flag), 0);
    cr_assert_eq(c.spool_max_mb, 9);
    cr_assert_str_eq(c.spool, "/tmp/s");
    unsetenv("NCCLSCOPE_SPOOL_MAX_MB");
    unlink(path);
}

Test(config, rejects)
{
    nsc_agent_cfg c;
    char *unknown[] = {"agent", "--no-such-option", "1"};
    cr_assert_eq(load(&c, 3, unknown), -1);
    char *missing[] = {"agent", "--burst"};
    cr_assert_eq(load(&c, 2, missing), -1);
    char *not_number[] = {"agent", "--burst", "12x"};
    cr_assert_eq(load(&c, 3, not_number), -1);
    char *negative[] = {"agent", "--burst", "-1"};
    cr_assert_eq(load(&c, 3, negative), -1);
    char *zero[] = {"agent", "--burst", "0"};
    cr_assert_eq(load(&c, 3, zero), -1);
    write_conf("rundir /no/equals\n");
    char *bad_file[] = {"agent", "--config", path};
    cr_assert_eq(load(&c, 3, bad_file), -1);
    unlink(path);
    write_conf("colour = blue\n");
    cr_assert_eq(load(&c, 3, bad_file), -1);
    unlink(path);
    char *no_file[] = {"agent", "--config"};
    cr_assert_eq(load(&c, 2, no_file), -1);
    char *absent[] = {"agent", "--config", "/nonexistent/agent.conf"};
    cr_assert_eq(load(&c, 3, absent), -1);
}

/* The HTTP limits are the agent's too (common/hguard.h), checked alike. */
Test(config, http_limits)
{
    nsc_agent_cfg c;
    char *defaults[] = {"agent"};
    cr_assert_eq(load(&c, 1, defaults), 0);
    cr_assert_eq(c.hg.max_conns_per_client, 32);
    cr_assert_eq(c.hg.write_timeout_ms, 30000);
    char *bad[] = {"agent", "--http-accept-backoff-ms", "0"};
    cr_assert_eq(load(&c, 3, bad), -1);
}

/* max_inflight matches the collector's default credit (32): 16 batches of
 * 50 ms do not cover ClickHouse's ack latency (ch_flush_ms 1 s and the
 * insert), so the agents fell behind a steady job. Bytes stay bounded by
 * max_inflight_mb. */
Test(config, max_inflight_covers_a_clickhouse_ack)
{
    nsc_agent_cfg c;
    char *defaults[] = {"agent"};
    cr_assert_eq(load(&c, 1, defaults), 0);
    cr_assert_eq(c.max_inflight, 32);
    cr_assert_eq(c.max_inflight_mb, 8);
}

/* detail: all by default, on-demand with a ring of detail_ring_mb and
 * detail_ring_s; anything else, or an empty ring, refused. */
Test(config, detail)
{
    nsc_agent_cfg c;
    char *defaults[] = {"agent"};
    cr_assert_eq(load(&c, 1, defaults), 0);
    cr_assert_str_eq(c.detail, "all");
    cr_assert_eq(c.on_demand, 0);
    cr_assert_eq(c.detail_ring_mb, 1024);
    cr_assert_eq(c.detail_ring_s, 3600);
    char *on[] = {"agent", "--detail", "on-demand", "--detail-ring-mb", "16", "--detail-ring-s", "60"};
    cr_assert_eq(load(&c, 7, on), 0);
    cr_assert_eq(c.on_demand, 1);
    cr_assert_eq(c.detail_ring_mb, 16);
    cr_assert_eq(c.detail_ring_s, 60);
    char *bad[] = {"agent", "--detail", "some"};
    cr_assert_eq(load(&c, 3, bad), -1);
    char *empty[] = {"agent", "--detail", "on-demand", "--detail-ring-mb", "0"};
    cr_assert_eq(load(&c, 5, empty), -1);
}

/* probe_spin_us: how long the loop waits awake for a probe's answer; 0 turns
 * it off (the loop sleeps), a value that is not a number is refused. */
Test(config, probe_spin_us)
{
    nsc_agent_cfg c;
    char *defaults[] = {"agent"};
    unsetenv("NCCLSCOPE_AGENT_PROBE_SPIN_US");
    cr_assert_eq(load(&c, 1, defaults), 0);
    cr_assert_eq(c.probe_spin_us, 1000);
    char *off[] = {"agent", "--probe-spin-us", "0"};
    cr_assert_eq(load(&c, 3, off), 0);
    cr_assert_eq(c.probe_spin_us, 0);
    char *bad[] = {"agent", "--probe-spin-us", "soon"};
    cr_assert_eq(load(&c, 3, bad), -1);
}
