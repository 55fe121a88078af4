/* fuzz_lpack.h: the key the ledger-value fuzzer and its seeds share. */
#ifndef NCCLSCOPE_FUZZ_LPACK_H
#define NCCLSCOPE_FUZZ_LPACK_H

#include "ledger_pack.h"

#define FUZZ_LPACK_KEY {1, 0x5f65f7aca7835f1ull, 96, 4}

#endif
