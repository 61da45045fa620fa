/* mpitempo: file helpers shared by the executables (see files.h). */
#include "run/files.h"
#include "base/mt_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mt_file_commit(FILE *f, const char *tmp, const char *path, char *err)
{
    if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
        int rc = mt_fail(err, MT_EIO, "writing %s failed: %s", tmp, strerror(errno ? errno : EIO));
        fclose(f);
        unlink(tmp);
        return rc;
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        int rc = mt_fail(err, MT_EIO, "cannot complete %s: %s", path, strerror(errno));
        unlink(tmp);
        return rc;
    }
    return MT_OK;
}

int mt_outdir_check(const char *dir, const char *const *names, char *err)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return mt_fail(err, MT_EIO, "--outdir '%s' is not an existing directory", dir);
    for (int i = 0; names[i]; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (stat(p, &st) == 0)
            return mt_fail(err, MT_EIO, "--outdir '%s' already holds results (%s); refusing to overwrite", dir,
                           names[i]);
    }
    return MT_OK;
}

int mt_outfile_open(mt_outfile_t *o, const char *dir, const char *name, char *err)
{
    snprintf(o->path, sizeof o->path, "%s/%s", dir, name);
    snprintf(o->tmp, sizeof o->tmp, "%s/.%s.%d.tmp", dir, name, (int)getpid());
    /* created exclusively: never through a link or into a file planted under this name */
    int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    o->f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!o->f) {
        int e = errno;
        if (fd >= 0) close(fd);
        return mt_fail(err, MT_EIO, "cannot write into --outdir '%s': %s", dir, strerror(e));
    }
    return MT_OK;
}

int mt_outfile_commit(mt_outfile_t *o, char *err)
{
    if (!o->f) return MT_OK;
    FILE *f = o->f;
    o->f = NULL;
    return mt_file_commit(f, o->tmp, o->path, err);
}

void mt_outfile_abort(mt_outfile_t *o)
{
    if (!o->f) return;
    mt_file_abort(o->f, o->tmp);
    o->f = NULL;
}

void mt_file_abort(FILE *f, const char *tmp)
{
    if (!f) return;
    fclose(f);
    unlink(tmp);
}

unsigned long mt_crc32(unsigned long crc, const unsigned char *buf, size_t n)
{
    uint32_t c = ~(uint32_t)crc;
    for (size_t i = 0; i < n; i++) {
        c ^= buf[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return (unsigned long)~c;
}

int mt_file_digest(FILE *f, const char *path, mt_digest_t *d, char *err)
{
    memset(d, 0, sizeof *d);
    if (f && (fflush(f) != 0 || ferror(f)))
        return mt_fail(err, MT_EIO, "writing %s failed: %s", path, strerror(errno ? errno : EIO));
    FILE *in = fopen(path, "rb");
    if (!in) return mt_fail(err, MT_EIO, "cannot read back %s: %s", path, strerror(errno));
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        d->bytes += (long long)n;
        for (size_t i = 0; i < n; i++) d->lines += buf[i] == '\n';
        d->crc32 = mt_crc32(d->crc32, buf, n);
    }
    int bad = ferror(in);
    fclose(in);
    if (bad) return mt_fail(err, MT_EIO, "cannot read back %s", path);
    return MT_OK;
}

char *mt_read_json_object(const char *path, const char *what, char *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        mt_fail(err, MT_EIO, "cannot read %s '%s': %s", what, path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0, r;
    char *b = malloc(cap);
    while (b && (r = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 >= cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    if (!b) {
        mt_fail(err, MT_ENOMEM, "out of memory reading %s", path);
        return NULL;
    }
    b[n] = '\0';
    while (n > 0 && (b[n - 1] == '\n' || b[n - 1] == ' ' || b[n - 1] == '\r')) b[--n] = '\0';
    if (n == 0 || b[0] != '{') {
        mt_fail(err, MT_EINVAL, "%s '%s' does not hold a JSON object", what, path);
        free(b);
        return NULL;
    }
    return b;
}

int mt_finish_error(int rank, const char *prog, const char *err)
{
    if (rank == 0 && err && *err) {
        fprintf(stderr, "%s: error: %s\n", prog, err);
        fflush(stderr);
    }
    MPI_Finalize();
    return 2;
}
