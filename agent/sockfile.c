/* sockfile.c: sockets bound in the run directory (see sockfile.h). */
#include "sockfile.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

int nsc_sockfile_bind(const nsc_agent_cfg *cfg, void *sock, const char *name, char err[256])
{
    char path[PATH_MAX + 16], ep[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", cfg->rundir, name);
    snprintf(ep, sizeof ep, "ipc://%s", path);
    if (!sock || zmq_bind(sock, ep) != 0) {
        snprintf(err, 256, "%.200s: %s", ep, zmq_strerror(zmq_errno()));
        return -1;
    }
    if (chmod(path, 0660) != 0) {
        snprintf(err, 256, "chmod %.200s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
