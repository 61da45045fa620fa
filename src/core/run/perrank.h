/* mpitempo: perrank.bin, every rank's start and end time of every measurement
 * (run --per-rank), binary and compact (docs/file-formats.md):
 *
 *   header, 48 bytes, little-endian as the machine writes it (byte_order tells):
 *     char magic[8] = "MTPRANK1"; u32 header_bytes = 48; u32 version = 1;
 *     u32 nprocs; u32 calls (calls per measurement: 1, or --inner of the loop schemes);
 *     u32 clock (0 local: each rank's timer minus rank 0's reading at the start;
 *                1 global: the synchronised global clock); u32 byte_order = 0x01020304;
 *     u64 nmeas (measurements in the file); u64 record_bytes = 16 + 16 x nprocs
 *   then nmeas records: u32 exp, u32 rep, u32 valid, u32 zero,
 *     f64 start_s[nprocs], f64 end_s[nprocs]
 *
 * The size is known up front: 48 + nmeas x (16 + 16 x nprocs) bytes. */
#ifndef MT_PERRANK_H
#define MT_PERRANK_H

#include <stdint.h>
#include <stdio.h>

#define MT_PERRANK_HEADER 48
#define MT_PERRANK_MAGIC "MTPRANK1"

static inline uint64_t mt_perrank_bytes(uint64_t nmeas, int nprocs)
{
    return MT_PERRANK_HEADER + nmeas * (16u + 16u * (uint64_t)nprocs);
}
/* the header with nmeas planned (patched by mt_perrank_finish) */
void mt_perrank_header(FILE *f, int nprocs, int calls, int global_clock, uint64_t nmeas);
/* the n measurements of experiment exp: start/end rank-major (ts[q * n + i]); -1 out of memory */
int mt_perrank_write(FILE *f, int exp, int n, int nprocs, const int *valid, const double *start, const double *end);
/* the number of measurements written, into the header; the file position returns to its end */
void mt_perrank_finish(FILE *f, uint64_t nmeas);

#endif
