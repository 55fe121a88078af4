/* logsafe.h: a string that came from a peer (an agent id, a host name, a job
 * id, a URL) made safe to print inside one log line.
 *
 * A peer chooses these bytes, so printed as they are they could end the line
 * and forge the next one, or hide behind terminal control sequences. Here
 * printable ASCII stays as it is and every other byte, the backslash
 * included, is written as \xNN, so the line stays one line and the original
 * bytes can be read back from it. */
#ifndef NSC_LOGSAFE_H
#define NSC_LOGSAFE_H

#include <stddef.h>

/* Room for a 64-byte identifier escaped whole (4 bytes a byte) and its NUL. */
#define NSC_LOGSAFE_ID (4 * 64 + 1)

/* v escaped into out (room >= 4), cut with "..." where it does not fit;
 * returns out, for use as a printf argument. */
const char *nsc_logsafe(char *out, size_t room, const char *v);

#endif
