/* store_err.h: the store's error codes.
 *
 * Owns the negative NSC_STORE_E* values that the store (store.h) and the
 * codecs of its values (ledger_pack.h) return; nsc_store_strerror (store.h)
 * explains them. Apart from store.h so that a codec can name its errors
 * without depending on the store that calls it.
 */
#ifndef NCCLSCOPE_STORE_ERR_H
#define NCCLSCOPE_STORE_ERR_H

enum nsc_store_err {
    NSC_STORE_OK = 0,
    NSC_STORE_ENOMEM = -1,
    NSC_STORE_ESCHEMA = -2,   /* the directory holds another schema version */
    NSC_STORE_ESTATE = -3,    /* call out of order (put without begin, write on read-only) */
    NSC_STORE_ENOTFOUND = -4,
    NSC_STORE_ECORRUPT = -5,  /* a stored value failed to decode */
    NSC_STORE_EFULL = -6,     /* the map cannot grow further (max_map) */
    NSC_STORE_EBUSY = -7,     /* read_begin_nowait: the map is being grown */
    NSC_STORE_EBLOCK = -8     /* a stored block failed to decode: the iterator skipped it */
};

#endif
