/* flat_check.h: the scanner's contract (cli/flat.h), checked on one line by
 * the unit tests and the fuzzer: whatever it accepts, the generic reader
 * accepts too, with a tree equal node for node. */
#ifndef NCCLSCOPE_TESTS_FLAT_CHECK_H
#define NCCLSCOPE_TESTS_FLAT_CHECK_H

#include <string.h>

#include "flat.h"
#include "json.h"

static int flat_same_node(const nsc_json *a, const nsc_json *b)
{
    if (a->kind != b->kind || a->count != b->count || a->span != b->span || a->key_len != b->key_len ||
        !a->key != !b->key || !a->text != !b->text)
        return 0;
    if (a->key && memcmp(a->key, b->key, a->key_len + 1) != 0)
        return 0;
    size_t tlen = a->kind == NSC_JSON_STRING || a->kind == NSC_JSON_NUMBER ? a->count : 0;
    return !a->text || memcmp(a->text, b->text, tlen + 1) == 0;
}

/* 1: scanned, and the same tree as nsc_json_parse's; 0: declined (or out of
 * memory); -1: the contract is broken. */
static int flat_check(nsc_flat *f, const char *line, size_t len)
{
    const nsc_json *root;
    if (nsc_flat_scan(f, line, len, &root) != NSC_FLAT_OK)
        return 0;
    nsc_json_doc doc;
    nsc_json_error e;
    if (nsc_json_parse(line, len, NULL, &doc, &e) != 0)
        return -1;
    int same = doc.nnodes == root->span;
    for (uint32_t i = 0; same && i < doc.nnodes; i++)
        same = flat_same_node(&root[i], &doc.nodes[i]);
    nsc_json_free(&doc);
    return same ? 1 : -1;
}

#endif
