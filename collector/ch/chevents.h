/* chevents.h: the ClickHouse events table's event columns, made from
 * common/event_fields.h.
 *
 * Owns the columns between the row's process (job, host, pid) and its batch
 * identity: `type`, then one column per field every event has
 * (NSC_FIELDS_HEAD), then `fields Array(UInt64)`: the type's own fields in
 * the order of its list in event_fields.h (a signed one sign-extended),
 * followed, only for an event with an origin (a PXN event: one of
 * NSC_FIELDS_ORIGIN not 0), by the three origin fields. Why an Array: one
 * column per distinct member name made a 66-column row of which a type
 * used a few, and ClickHouse writes and merges every column of every row;
 * the per-type fields are read back whole, never filtered on. A field
 * added to event_fields.h is an element here with no edit. chrows.c writes
 * the rest of the events table's rows.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHEVENTS_H
#define NCCLSCOPE_COLLECTOR_CHEVENTS_H

#include "chcols.h"
#include "event.h"

/* The events table's columns in order: NSC_CH_PROC_COLUMNS, these
 * ("type UInt8, id UInt64, ..."), NSC_CH_ORIGIN_COLUMNS. */
const char *nsc_ch_event_columns(void);

/* e's values of the columns from type on, before the batch identity, put
 * into the row of t. */
void nsc_ch_event_values(nsc_ch_cols *t, const nsc_event *e);

/* The inverse, for reading RowBinary rows back: the event whose values (the
 * columns of nsc_ch_event_values: little-endian, fixed width, the Array as
 * its LEB128 length and elements) start at p, into *e. Returns the bytes
 * they take, or 0 when fewer than that are left (len), the type is unknown
 * or the Array's length is not the type's. */
size_t nsc_ch_event_read(const uint8_t *p, size_t len, nsc_event *e);

#endif
