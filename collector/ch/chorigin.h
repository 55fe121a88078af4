/* chorigin.h: the columns that say where a ClickHouse row came from.
 *
 * Owns the column lists every table of a job's records shares: the sending
 * process first, the identity of the batch that brought the row last (why
 * the identity: chrows.h). The events and ledger columns (chevents.h,
 * chledger.h) are made around them, and chrows.h's tables are defined with
 * them; kept apart so that those two need none of chrows.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHORIGIN_H
#define NCCLSCOPE_COLLECTOR_CHORIGIN_H

/* The columns every table of a job's records starts with (the sending
 * process), and those the batch's records end with (the batch identity). */
#define NSC_CH_PROC_COLUMNS "job String, host String, pid UInt32"
#define NSC_CH_SECTION_COLUMNS "agent String, epoch UInt64, batch_seq UInt64, section UInt32"
#define NSC_CH_ORIGIN_COLUMNS NSC_CH_SECTION_COLUMNS ", idx UInt32"

#endif
