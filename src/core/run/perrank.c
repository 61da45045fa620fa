/* mpitempo: the perrank.bin writer (format in perrank.h and docs/file-formats.md). */
#include "run/perrank.h"

#include <stdlib.h>
#include <string.h>

void mt_perrank_header(FILE *f, int nprocs, int calls, int global_clock, uint64_t nmeas)
{
    unsigned char h[MT_PERRANK_HEADER];
    uint32_t u[6] = {MT_PERRANK_HEADER, 1, (uint32_t)nprocs, (uint32_t)calls, global_clock ? 1u : 0u, 0x01020304u};
    uint64_t v[2] = {nmeas, 16u + 16u * (uint64_t)nprocs};
    memcpy(h, MT_PERRANK_MAGIC, 8);
    memcpy(h + 8, u, sizeof u);
    memcpy(h + 32, v, sizeof v);
    fwrite(h, 1, sizeof h, f);
}

int mt_perrank_write(FILE *f, int exp, int n, int nprocs, const int *valid, const double *start, const double *end)
{
    double *row = malloc(sizeof(double) * 2 * (size_t)nprocs);
    if (!row) return -1;
    for (int i = 0; i < n; i++) {
        uint32_t head[4] = {(uint32_t)exp, (uint32_t)i, valid[i] ? 1u : 0u, 0};
        for (int q = 0; q < nprocs; q++) {
            row[q] = start[(size_t)q * (size_t)n + (size_t)i];
            row[nprocs + q] = end[(size_t)q * (size_t)n + (size_t)i];
        }
        fwrite(head, sizeof head, 1, f);
        fwrite(row, sizeof(double), 2 * (size_t)nprocs, f);
    }
    free(row);
    return 0;
}

void mt_perrank_finish(FILE *f, uint64_t nmeas)
{
    if (fseek(f, 32, SEEK_SET) == 0) fwrite(&nmeas, sizeof nmeas, 1, f);
    fseek(f, 0, SEEK_END);
}
