/* chevents.h: the ClickHouse events table's event columns, made from
 * common/event_fields.h.
 *
 * Owns the columns between the row's process (job, host, pid) and its batch
 * identity: `type`, then one column per field every event has
 * (NSC_FIELDS_HEAD, NSC_FIELDS_ORIGIN), then one column per distinct member
 * name of the per-type fields, in the order the table first names them. A
 * name shared by several types is one column; a type writes 0 into the
 * columns it lacks. A field added to event_fields.h becomes a column here
 * with no edit. chrows.c writes the rest of the events table's rows.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHEVENTS_H
#define NCCLSCOPE_COLLECTOR_CHEVENTS_H

#include "chrows.h"
#include "event.h"

/* The events table's columns in order: NSC_CH_PROC_COLUMNS, these
 * ("type UInt8, id UInt64, ..."), NSC_CH_ORIGIN_COLUMNS. */
const char *nsc_ch_event_columns(void);

/* e's values of the columns from type on, before the batch identity, put
 * into the row of t. */
void nsc_ch_event_values(nsc_ch_cols *t, const nsc_event *e);

/* The inverse, for reading RowBinary rows back: the event whose values (the
 * columns of nsc_ch_event_values, little-endian, fixed width) start at p, into *e. Returns the bytes
 * they take, or 0 when fewer than that are left (len) or the type is unknown. */
size_t nsc_ch_event_read(const uint8_t *p, size_t len, nsc_event *e);

#endif
