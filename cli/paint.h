/* paint.h: colour for people at a terminal.
 *
 * Owns when the CLI colours its text: only when standard output is a
 * terminal and NO_COLOR is unset or empty (https://no-color.org), so pipes,
 * files and scripts get plain text. Verdicts and states are coloured by
 * what they mean: bad red, doubtful yellow, good green.
 */
#ifndef NCCLSCOPE_CLI_PAINT_H
#define NCCLSCOPE_CLI_PAINT_H

typedef enum nsc_paint { NSC_PAINT_NONE, NSC_PAINT_BAD, NSC_PAINT_DOUBT, NSC_PAINT_GOOD } nsc_paint;

/* Whether this process's standard output should be coloured. */
int nsc_paint_wanted(void);
/* The escape that starts colour p, and the one that ends it ("" when off). */
const char *nsc_paint_on(int on, nsc_paint p);
const char *nsc_paint_off(int on);

#endif
