/* main.c: ncclscope-collector's entry point. */
#include <stdio.h>

#include "collector.h"

int main(int argc, char **argv)
{
    nsc_coll_cfg cfg;
    int rc = nsc_coll_cfg_load(&cfg, argc, argv, stderr);
    if (rc)
        return rc > 0 ? 0 : 2;
    return nsc_collector_run(&cfg);
}
