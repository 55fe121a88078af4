/* block.c: the block's frame.
 *
 * Owns the fixed header every block value starts with (writing it, and
 * checking it before anything else is read) and the error texts. Encoding
 * the columns is block_enc.c, decoding them block_dec.c; the format they
 * share is block_int.h; docs/collector-store.md, "Blocks", describes it.
 */
#include "block_int.h"

#include "bytes.h"

static const char *const err_text[] = {
    "ok", "block shorter than its header", "not an event block", "unknown block version",
    "unknown block codec", "block record counts or sizes over the limits",
    "block payload does not decompress to its declared size",
    "block column table does not match the payload",
    "block column ends inside a value", "block column has bytes after its records",
    "block holds an unknown event type or state", "out of memory"};

const char *nsc_block_strerror(int err)
{
    int i = -err;
    return i >= 0 && i < (int)(sizeof err_text / sizeof *err_text) ? err_text[i] : "unknown error";
}

void nsc_blk_write_hdr(uint8_t *p, uint32_t codec, uint32_t raw_len, const nsc_block_hdr *h)
{
    nsc_put_be32(p, BLOCK_MAGIC);
    nsc_put_be32(p + 4, codec);
    nsc_put_be32(p + 8, h->proc);
    nsc_put_be32(p + 12, h->nevents);
    nsc_put_be32(p + 16, h->nstates);
    nsc_put_be32(p + 20, h->ncompletions);
    nsc_put_be32(p + 24, raw_len);
    nsc_put_be64(p + 28, h->t_min);
    nsc_put_be64(p + 36, h->t_max);
}

int nsc_block_read_hdr(const void *buf, size_t len, nsc_block_hdr *h)
{
    const uint8_t *p = buf;
    if (len < NSC_BLOCK_HDR_LEN)
        return NSC_BLOCK_ESHORT;
    uint32_t magic = nsc_get_be32(p);
    if ((magic & BLOCK_MAGIC_MASK) != (BLOCK_MAGIC & BLOCK_MAGIC_MASK))
        return NSC_BLOCK_EMAGIC;
    if (magic != BLOCK_MAGIC)
        return NSC_BLOCK_EVERSION;
    if (nsc_get_be32(p + 4) > CODEC_ZSTD)
        return NSC_BLOCK_ECODEC;
    h->proc = nsc_get_be32(p + 8);
    h->nevents = nsc_get_be32(p + 12);
    h->nstates = nsc_get_be32(p + 16);
    h->ncompletions = nsc_get_be32(p + 20);
    h->t_min = nsc_get_be64(p + 28);
    h->t_max = nsc_get_be64(p + 36);
    if (h->nevents > NSC_BLOCK_MAX_RECORDS || h->nstates > NSC_BLOCK_MAX_RECORDS ||
        h->ncompletions > NSC_BLOCK_MAX_RECORDS)
        return NSC_BLOCK_ELIMIT;
    return 0;
}
