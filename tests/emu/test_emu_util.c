/* test_emu_util.c: see test_emu_util.h. */
#include "test_emu_util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tmpdir_new(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/nsc-emu-test.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

int run_emu(const char *dir, const char *extra_env, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "LD_LIBRARY_PATH=%s NCCLSCOPE_TEST_RECORD_FILE=%s/rec-%%p.jsonl %s %s --plugin record "
             "--rundir-base %s/run --summary %s/summary.json %s",
             EMU_LIB_DIR, dir, extra_env ? extra_env : "", EMU_BIN, dir, dir, args);
    return system(cmd);
}

void jlines_read_file(const char *path, jlines *out)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        out->docs = realloc(out->docs, (out->n + 1) * sizeof *out->docs);
        nsc_json_error err;
        cr_assert_eq(nsc_json_parse(line, (size_t)n, NULL, &out->docs[out->n], &err), 0,
                     "%s: %s at %zu: %s", path, err.msg, err.offset, line);
        out->n++;
    }
    free(line);
    fclose(f);
}

void jlines_read_dir(const char *dir, jlines *out)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "rec-", 4) != 0)
            continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        jlines_read_file(p, out);
    }
    closedir(d);
}

void jlines_free(jlines *l)
{
    for (size_t i = 0; i < l->n; i++)
        nsc_json_free(&l->docs[i]);
    free(l->docs);
    l->docs = NULL;
    l->n = 0;
}

nsc_json_doc summary_read(const char *dir)
{
    char p[512];
    snprintf(p, sizeof p, "%s/summary.json", dir);
    FILE *f = fopen(p, "r");
    cr_assert_not_null(f, "no summary %s", p);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int c;
    while ((c = fgetc(f)) != EOF)
        fputc(c, m);
    fclose(m);
    fclose(f);
    nsc_json_doc d;
    nsc_json_error err;
    cr_assert_eq(nsc_json_parse(buf, len, NULL, &d, &err), 0, "%s: %s at %zu", p, err.msg, err.offset);
    free(buf);
    return d;
}

uint64_t jnum(const nsc_json *obj, const char *key)
{
    uint64_t v = 0;
    int64_t s;
    if (nsc_json_u64(nsc_json_get(obj, key), &v) && nsc_json_i64(nsc_json_get(obj, key), &s) == 0)
        v = (uint64_t)s;
    return v;
}

uint64_t jhex(const nsc_json *obj, const char *key)
{
    const char *s = nsc_json_str(nsc_json_get(obj, key));
    return s && strncmp(s, "0x", 2) == 0 ? strtoull(s, NULL, 16) : 0;
}

const char *jstr(const nsc_json *obj, const char *key)
{
    const char *s = nsc_json_str(nsc_json_get(obj, key));
    return s ? s : "";
}

uint64_t summary_count(const nsc_json *calls, const char *kind, const char *type)
{
    return jnum(nsc_json_get(calls, kind), type);
}
