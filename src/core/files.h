/* mpitempo: files of the executables: atomic completion (temporary name +
 * rename), reading the launcher's JSON record, and the common error exit. */
#ifndef MT_FILES_H
#define MT_FILES_H

#include <stdio.h>

/* Flush, fsync and close f (written under tmp), then rename tmp to path. On any
 * failure (a full disk, say) tmp is removed, nothing named path appears, and err
 * names the file. f is closed in every case. */
int mt_file_commit(FILE *f, const char *tmp, const char *path, char *err);
/* Close f and remove tmp (an aborted write). f may be NULL. */
void mt_file_abort(FILE *f, const char *tmp);
/* Read a small file that must hold one JSON object; malloc'ed text or NULL + err. */
char *mt_read_json_object(const char *path, const char *what, char *err);
/* Rank 0 prints "PROG: error: ERR"; every rank finalises MPI; returns exit code 2. */
int mt_finish_error(int rank, const char *prog, const char *err);

#endif
