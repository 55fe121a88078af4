/* log.c: the plugin's messages.
 *
 * Owns where a message goes: NCCL's logger once an init handed one over,
 * else stderr, warnings only. Every part logs through here, so none needs
 * the life cycle (life.c) that learns the logger.
 */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

static _Atomic(ncclDebugLogger_t) logger;

void nsc_log_set(ncclDebugLogger_t fn)
{
    if (fn)
        atomic_store(&logger, fn);
}

void nsc_log(int level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ncclDebugLogger_t fn = atomic_load(&logger);
    if (fn)
        fn(level, 1 /* NCCL_INIT */, __FILE__, __LINE__, "%s", msg);
    else if (level <= NSC_LOG_WARN)
        fprintf(stderr, "%s\n", msg);
}
