/* curve.h: CurveZMQ key files for the agent-to-collector link.
 *
 * Owns the on-disk form of a CurveZMQ keypair: PREFIX.pub holds the public key
 * and PREFIX.key the secret key (mode 0600), each one line of 40 Z85
 * characters. Generating writes both; loading validates the text (length,
 * alphabet, decodes to 32 bytes), refuses a secret key file that others can
 * read, and derives the public key from a secret one so a process needs only
 * its secret key file. Used by the agent (client) and the collector (server).
 */
#ifndef NCCLSCOPE_CURVE_H
#define NCCLSCOPE_CURVE_H

#include <stddef.h>

#define NSC_CURVE_KEY_LEN 40  /* Z85 characters of a 32-byte key */
#define NSC_CURVE_ERR_MAX 256

typedef struct nsc_curve_pair {
    char public_key[NSC_CURVE_KEY_LEN + 1];
    char secret_key[NSC_CURVE_KEY_LEN + 1];
} nsc_curve_pair;

/* Generate a keypair into PREFIX.pub (0644) and PREFIX.key (0600); existing
 * files are not overwritten. Returns 0, or -1 with a message in err. */
int nsc_curve_generate(const char *prefix, nsc_curve_pair *out, char err[NSC_CURVE_ERR_MAX]);
/* Read a public key file (any mode). Returns 0 or -1 with a message. */
int nsc_curve_load_public(const char *path, char key[NSC_CURVE_KEY_LEN + 1], char err[NSC_CURVE_ERR_MAX]);
/* Read a secret key file (must not be group/other accessible) and derive its
 * public key. Returns 0 or -1 with a message. */
int nsc_curve_load_secret(const char *path, nsc_curve_pair *out, char err[NSC_CURVE_ERR_MAX]);
/* Whether text is a valid Z85 key (40 characters that decode). */
int nsc_curve_key_valid(const char *text, size_t len);

#endif
