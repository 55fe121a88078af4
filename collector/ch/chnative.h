/* chnative.h: a table's rows (chcols.h) as one ClickHouse Native block, in
 * the order of the table's ordering key.
 *
 * Why: ClickHouse 18.16 spends most of an insert's CPU reading RowBinary a
 * value at a time and sorting the block by the ordering key. A Native block
 * is read a column at a time, and a block already in key order is not sorted
 * again (the server checks that first). The collector sorts with every key
 * value an integer (a String's is its text's rank among the rows' distinct
 * texts), its leading key columns packed into 128 bits per row, far cheaper
 * than the server's column-by-column compare; then it copies each column's
 * values in that order into the block.
 *
 * Native as ClickHouse's HTTP interface takes it: the number of columns and
 * of rows (LEB128), then per column its name and type (Strings) and its
 * values, fixed width little-endian, a String as its LEB128 length and bytes,
 * an Array as each row's end among the elements (UInt64) then the elements.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHNATIVE_H
#define NCCLSCOPE_COLLECTOR_CHNATIVE_H

#include "chcols.h"
#include "chrows.h"

/* Scratch memory of the conversion, kept from one insert to the next. */
typedef struct nsc_ch_native nsc_ch_native;

nsc_ch_native *nsc_ch_native_new(void);
void nsc_ch_native_free(nsc_ch_native *n);

/* The rows of table d (their columns in d->columns' order) as one Native
 * block in out (emptied first), sorted by d->order_by; rows equal in the key
 * keep their order. 0, or -1 when the rows do not fit the columns (another
 * count, a value missing), a column type is not one of String,
 * (U)Int8/16/32/64 or an Array of those integers (not in the key), or out
 * of memory. */
int nsc_ch_native_block(nsc_ch_native *n, const nsc_ch_table_def *d, const nsc_ch_cols *rows, nsc_ch_buf *out);

#endif
