/* ncclenum.h: NCCL's enum values for the names its profiler ABI v2 and later
 * pass as strings (ncclFunc_t, ncclDataType_t, NCCL_ALGO_*, NCCL_PROTO_*), as
 * v1 descriptors carry them. Shared by the plugin's chaining (a v1 plugin
 * behind a newer NCCL) and the emulator (which plays a v1 NCCL). */
#ifndef NCCLSCOPE_NCCLENUM_H
#define NCCLSCOPE_NCCLENUM_H

#include <stdint.h>

typedef enum { NSC_NCCL_FUNC, NSC_NCCL_DTYPE, NSC_NCCL_ALGO, NSC_NCCL_PROTO } nsc_nccl_enum_kind;

/* The enum value of name; 0 (NCCL's first) for NULL or an unknown name. */
uint8_t nsc_nccl_enum(nsc_nccl_enum_kind kind, const char *name);

#endif
