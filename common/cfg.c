/* cfg.c: option tables filled from flags, environment, file, defaults (see cfg.h). */
#include "cfg.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct unit {
    const char *name;
    uint64_t scale;  /* bytes, or ms */
} unit;

static const unit size_units[] = {{"K", 1ull << 10}, {"KiB", 1ull << 10}, {"M", 1ull << 20},
                                  {"MiB", 1ull << 20}, {"G", 1ull << 30}, {"GiB", 1ull << 30},
                                  {"T", 1ull << 40}, {"TiB", 1ull << 40}, {NULL, 0}};
static const unit time_units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000},
                                  {"d", 86400000}, {NULL, 0}};

/* Leading decimal digits of s into *v; *rest after them. -1 if none or too big. */
static int digits(const char *s, uint64_t *v, const char **rest)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno)
        return -1;
    *v = n;
    *rest = end;
    return 0;
}

/* "N" in the key's unit, or "N<unit>" converted to it exactly. */
static const char *parse_scaled(const char *val, const unit *units, uint64_t key_unit, uint64_t *out)
{
    uint64_t n;
    const char *rest;
    if (digits(val, &n, &rest))
        return "wants a number";
    if (!*rest) {
        *out = n;
        return NULL;
    }
    for (const unit *u = units; u->name; u++) {
        if (strcasecmp(rest, u->name) != 0)
            continue;
        if (n && u->scale > UINT64_MAX / n)
            return "is too large";
        uint64_t base = n * u->scale;
        if (base % key_unit)
            return "is not a whole number of the key's unit";
        *out = base / key_unit;
        return NULL;
    }
    return "has an unknown unit";
}

int nsc_cfg_set(const nsc_cfg_spec *spec, void *cfg, const nsc_opt *o, const char *val,
                const char *src, FILE *err)
{
    char *dst = (char *)cfg + o->off;
    const char *why = NULL;
    uint64_t v = 0;
    const char *rest;
    switch (o->kind) {
    case NSC_OPT_TEXT:
        if (strlen(val) >= o->size) {
            fprintf(err, "%s: %s: %s is too long (at most %zu bytes)\n", spec->prog, src, o->key,
                    o->size - 1);
            return -1;
        }
        strcpy(dst, val);
        return 0;
    case NSC_OPT_U64:
        if (digits(val, &v, &rest) || *rest)
            why = "wants a number";
        break;
    case NSC_OPT_SIZE:
        why = parse_scaled(val, size_units, o->unit, &v);
        break;
    case NSC_OPT_DURATION:
        why = parse_scaled(val, time_units, o->unit, &v);
        break;
    }
    if (why) {
        fprintf(err, "%s: %s: %s %s, got '%s'\n", spec->prog, src, o->key, why, val);
        return -1;
    }
    memcpy(dst, &v, sizeof v);
    return 0;
}

static const nsc_opt *find_key(const nsc_cfg_spec *spec, const char *key)
{
    for (size_t i = 0; i < spec->nopts; i++)
        if (strcmp(spec->opts[i].key, key) == 0)
            return &spec->opts[i];
    return NULL;
}

/* "--some-key" -> the option "some_key" */
static const nsc_opt *find_flag(const nsc_cfg_spec *spec, const char *arg)
{
    char key[64];
    size_t n = strlen(arg);
    if (strncmp(arg, "--", 2) != 0 || n - 2 >= sizeof key)
        return NULL;
    for (size_t i = 2; i <= n; i++)
        key[i - 2] = arg[i] == '-' ? '_' : arg[i];
    return find_key(spec, key);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && strchr(" \t\r\n", s[n - 1]))
        s[--n] = 0;
    return s;
}

static int load_file(const nsc_cfg_spec *spec, void *cfg, const char *path, FILE *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(err, "%s: config %s: %s\n", spec->prog, path, strerror(errno));
        return -1;
    }
    char line[PATH_MAX + 64], src[PATH_MAX + 32];
    int rc = 0;
    for (unsigned n = 1; rc == 0 && fgets(line, sizeof line, f); n++) {
        char *s = trim(line), *eq = strchr(s, '=');
        if (!*s || *s == '#')
            continue;
        snprintf(src, sizeof src, "%s:%u", path, n);
        if (!eq) {
            fprintf(err, "%s: %s: expected 'key = value'\n", spec->prog, src);
            rc = -1;
            continue;
        }
        *eq = 0;
        const nsc_opt *o = find_key(spec, trim(s));
        if (!o) {
            fprintf(err, "%s: %s: unknown key '%s'\n", spec->prog, src, trim(s));
            rc = -1;
        } else {
            rc = nsc_cfg_set(spec, cfg, o, trim(eq + 1), src, err);
        }
    }
    fclose(f);
    return rc;
}

/* Every argument is a --flag VALUE pair; --config names the file. */
static int check_flags(const nsc_cfg_spec *spec, int argc, char **argv, const char **file, FILE *err)
{
    for (int i = 1; i < argc; i += 2) {
        int is_config = strcmp(argv[i], "--config") == 0;
        if (!is_config && !find_flag(spec, argv[i])) {
            fprintf(err, "%s: unknown option '%s' (see --help)\n", spec->prog, argv[i]);
            return -1;
        }
        if (i + 1 >= argc) {
            fprintf(err, "%s: %s needs a value\n", spec->prog, argv[i]);
            return -1;
        }
        if (is_config)
            *file = argv[i + 1];
    }
    return 0;
}

int nsc_cfg_load(const nsc_cfg_spec *spec, void *cfg, int argc, char **argv, FILE *err)
{
    const char *file = spec->config_env ? getenv(spec->config_env) : NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            nsc_cfg_usage(spec, stdout);
            return 1;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("%s %s\n", spec->prog, NSC_VERSION);
            return 1;
        }
    }
    if (check_flags(spec, argc, argv, &file, err))
        return -1;
    for (size_t i = 0; i < spec->nopts; i++)
        if (nsc_cfg_set(spec, cfg, &spec->opts[i], spec->opts[i].def, "default", err))
            return -1;
    if (file && load_file(spec, cfg, file, err))
        return -1;
    for (size_t i = 0; i < spec->nopts; i++) {
        const char *v = getenv(spec->opts[i].env);
        if (v && nsc_cfg_set(spec, cfg, &spec->opts[i], v, spec->opts[i].env, err))
            return -1;
    }
    for (int i = 1; i < argc; i += 2) {
        const nsc_opt *o = find_flag(spec, argv[i]);
        if (o && nsc_cfg_set(spec, cfg, o, argv[i + 1], argv[i], err))
            return -1;
    }
    return 0;
}

void nsc_cfg_usage(const nsc_cfg_spec *spec, FILE *out)
{
    fprintf(out, "%sPriority: flags > environment > config file > defaults. Sizes take\n"
                 "K/M/G/T suffixes, durations ms/s/m/h/d (bare numbers: the key's unit).\n\n",
            spec->about);
    for (size_t i = 0; i < spec->nopts; i++) {
        const nsc_opt *o = &spec->opts[i];
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", o->key);
        for (char *p = flag + 2; *p; p++)
            if (*p == '_')
                *p = '-';
        fprintf(out, "  %-24s %s\n  %-24s env %s, default '%s'\n", flag, o->help, "", o->env, o->def);
    }
    fprintf(out, "  --config FILE            'key = value' lines (keys as above, with '_')%s%s\n",
            spec->config_env ? "; env " : "", spec->config_env ? spec->config_env : "");
    if (spec->more_help)
        fputs(spec->more_help, out);
    fputs("  --help                   this text\n  --version                the version\n", out);
}
