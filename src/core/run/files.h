/* mpitempo: files of the executables: atomic completion (temporary name +
 * rename), reading the launcher's JSON record, and the common error exit. */
#ifndef MT_FILES_H
#define MT_FILES_H

#include <stdio.h>

/* One result file written atomically: opened as DIR/.NAME.<pid>.tmp, renamed
 * to DIR/NAME by mt_outfile_commit; mt_outfile_abort removes it. */
typedef struct mt_outfile {
    FILE *f;           /* NULL when not open */
    char tmp[4096];
    char path[4096];
} mt_outfile_t;

/* DIR must exist and must not hold any of names[0..n) (a NULL-terminated list):
 * results are never overwritten. */
int mt_outdir_check(const char *dir, const char *const *names, char *err);
int mt_outfile_open(mt_outfile_t *o, const char *dir, const char *name, char *err);
int mt_outfile_commit(mt_outfile_t *o, char *err);
void mt_outfile_abort(mt_outfile_t *o);

/* Flush, fsync and close f (written under tmp), then rename tmp to path. On any
 * failure (a full disk, say) tmp is removed, nothing named path appears, and err
 * names the file. f is closed in every case. */
int mt_file_commit(FILE *f, const char *tmp, const char *path, char *err);
/* Close f and remove tmp (an aborted write). f may be NULL. */
void mt_file_abort(FILE *f, const char *tmp);
/* Read a small file that must hold one JSON object; malloc'ed text or NULL + err. */
char *mt_read_json_object(const char *path, const char *what, char *err);
/* What meta.json records of each data file, so that a reader can tell a file that is not what
 * it was when the run completed (truncated at a line boundary, header only, edited): its size in
 * bytes, its number of lines ('\n'), and its CRC-32 (ISO-HDLC, as zlib.crc32). */
typedef struct mt_digest {
    long long bytes;
    long long lines;
    unsigned long crc32;
} mt_digest_t;
/* The digest of f (flushed first) as written so far, read back from its file at path. */
int mt_file_digest(FILE *f, const char *path, mt_digest_t *d, char *err);
/* CRC-32 of n bytes continuing crc (start with 0). */
unsigned long mt_crc32(unsigned long crc, const unsigned char *buf, size_t n);

/* Rank 0 prints "PROG: error: ERR"; every rank finalises MPI; returns exit code 2. */
int mt_finish_error(int rank, const char *prog, const char *err);

#endif
