/* secret.h: comparing secrets (bearer tokens) without leaking them by timing.
 *
 * Owns the one comparison of a presented secret with the expected one: its
 * time depends on the lengths only, never on where the first differing byte
 * is, so a client cannot guess a token byte by byte from response times.
 */
#ifndef NCCLSCOPE_SECRET_H
#define NCCLSCOPE_SECRET_H

/* 1 if the NUL-terminated strings `given` and `expected` are equal, else 0. */
int nsc_secret_equal(const char *given, const char *expected);

#endif
