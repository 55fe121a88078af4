/* curve.c: CurveZMQ key files (see curve.h). */
#include "curve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

int nsc_curve_key_valid(const char *text, size_t len)
{
    uint8_t raw[32];
    char z[NSC_CURVE_KEY_LEN + 1];
    if (len != NSC_CURVE_KEY_LEN)
        return 0;
    memcpy(z, text, len);
    z[len] = 0;
    return zmq_z85_decode(raw, z) != NULL;
}

/* Write one key line to a new file of the given mode. */
static int write_key(const char *path, const char *key, mode_t mode, char err[NSC_CURVE_ERR_MAX])
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        snprintf(err, NSC_CURVE_ERR_MAX, "%.200s: %s", path, strerror(errno));
        return -1;
    }
    char line[NSC_CURVE_KEY_LEN + 2];
    snprintf(line, sizeof line, "%s\n", key);
    ssize_t n = write(fd, line, NSC_CURVE_KEY_LEN + 1);
    int rc = close(fd);
    if (n != NSC_CURVE_KEY_LEN + 1 || rc != 0) {
        snprintf(err, NSC_CURVE_ERR_MAX, "%.200s: write failed", path);
        unlink(path);
        return -1;
    }
    return 0;
}

static int key_paths(const char *prefix, char pub[4096], char sec[4096], char err[NSC_CURVE_ERR_MAX])
{
    if (snprintf(pub, 4096, "%s.pub", prefix) >= 4096 || snprintf(sec, 4096, "%s.key", prefix) >= 4096) {
        snprintf(err, NSC_CURVE_ERR_MAX, "key file prefix too long");
        return -1;
    }
    return 0;
}

int nsc_curve_generate(const char *prefix, nsc_curve_pair *out, char err[NSC_CURVE_ERR_MAX])
{
    char pub[4096], sec[4096];
    if (key_paths(prefix, pub, sec, err))
        return -1;
    if (!zmq_has("curve") || zmq_curve_keypair(out->public_key, out->secret_key) != 0) {
        snprintf(err, NSC_CURVE_ERR_MAX, "this libzmq cannot make CURVE keys (built without CURVE)");
        return -1;
    }
    if (write_key(sec, out->secret_key, 0600, err))
        return -1;
    if (write_key(pub, out->public_key, 0644, err)) {
        unlink(sec);
        return -1;
    }
    return 0;
}

/* Read the one key line of path into key; fails on anything else in the file. */
static int read_key(const char *path, int secret, char key[NSC_CURVE_KEY_LEN + 1], char err[NSC_CURVE_ERR_MAX])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, NSC_CURVE_ERR_MAX, "%.200s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (secret && (st.st_mode & 077)) {
        snprintf(err, NSC_CURVE_ERR_MAX, "%.200s: secret key file is accessible by others (chmod 600)", path);
        close(fd);
        return -1;
    }
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    size_t len = n > 0 ? (size_t)n : 0;
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
        len--;
    if (!nsc_curve_key_valid(buf, len)) {
        snprintf(err, NSC_CURVE_ERR_MAX, "%.200s: not a CURVE key (one line of %d Z85 characters)", path,
                 NSC_CURVE_KEY_LEN);
        return -1;
    }
    memcpy(key, buf, NSC_CURVE_KEY_LEN);
    key[NSC_CURVE_KEY_LEN] = 0;
    return 0;
}

int nsc_curve_load_public(const char *path, char key[NSC_CURVE_KEY_LEN + 1], char err[NSC_CURVE_ERR_MAX])
{
    return read_key(path, 0, key, err);
}

int nsc_curve_load_secret(const char *path, nsc_curve_pair *out, char err[NSC_CURVE_ERR_MAX])
{
    if (read_key(path, 1, out->secret_key, err))
        return -1;
    if (zmq_curve_public(out->public_key, out->secret_key) != 0) {
        snprintf(err, NSC_CURVE_ERR_MAX, "%.200s: cannot derive the public key (libzmq without CURVE?)", path);
        return -1;
    }
    return 0;
}
