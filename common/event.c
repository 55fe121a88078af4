/* event.c: names of event types and states, and event mask parsing. */
#include "event.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const type_names[NSC_T_COUNT] = {
    "Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl", "KernelCh",
    "NetPlugin", "GroupApi", "CollApi", "P2pApi", "KernelLaunch", "CeColl",
    "CeSync", "CeBatch", "KernelPhase"};

static const char *const state_names[NSC_S_COUNT] = {
    "ProxyOpSendPosted", "ProxyOpSendRemFifoWait", "ProxyOpSendTransmitted",
    "ProxyOpSendDone", "ProxyOpRecvPosted", "ProxyOpRecvReceived",
    "ProxyOpRecvTransmitted", "ProxyOpRecvDone", "ProxyStepSendGPUWait",
    "ProxyStepSendWait", "ProxyStepRecvWait", "ProxyStepRecvFlushWait",
    "ProxyStepRecvGPUWait", "ProxyCtrlIdle", "ProxyCtrlActive", "ProxyCtrlSleep",
    "ProxyCtrlWakeup", "ProxyCtrlAppend", "ProxyCtrlAppendEnd",
    "ProxyOpInProgress", "ProxyStepSendPeerWait", "NetPluginUpdate",
    "KernelChStop", "GroupStartApiStop", "GroupEndApiStart", "CeCollStart",
    "CeCollComplete", "CeSyncStart", "CeSyncComplete", "CeBatchStart",
    "CeBatchComplete", "KernelPhaseStop"};

const char *nsc_type_name(unsigned type)
{
    return type < NSC_T_COUNT ? type_names[type] : NULL;
}

const char *nsc_state_name(unsigned state)
{
    return state < NSC_S_COUNT ? state_names[state] : NULL;
}

int nsc_type_from_name(const char *name)
{
    for (int t = 0; t < NSC_T_COUNT; t++)
        if (strcasecmp(name, type_names[t]) == 0)
            return t;
    return -1;
}

static int mask_parse_number(const char *text, uint32_t *mask)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno || *end != '\0' || v > NSC_MASK_ALL)
        return -1;
    *mask = (uint32_t)v;
    return 0;
}

/* Comma-separated type names; empty items are rejected so typos don't pass. */
static int mask_parse_names(const char *text, uint32_t *mask)
{
    uint32_t m = 0;
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[32];
        if (len == 0 || len >= sizeof item)
            return -1;
        memcpy(item, p, len);
        item[len] = '\0';
        int t = strcasecmp(item, "all") == 0 ? NSC_T_COUNT : nsc_type_from_name(item);
        if (t < 0)
            return -1;
        m |= t == NSC_T_COUNT ? NSC_MASK_ALL : 1u << t;
        if (!comma)
            break;
        p = comma + 1;
    }
    *mask = m;
    return 0;
}

int nsc_mask_parse(const char *text, uint32_t *mask)
{
    if (!text || !*text)
        return -1;
    if (text[0] >= '0' && text[0] <= '9')
        return mask_parse_number(text, mask);
    return mask_parse_names(text, mask);
}
