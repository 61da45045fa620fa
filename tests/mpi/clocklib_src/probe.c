/* A test program of libmpitempo-clock (tests/mpi/test_clocklib_mpi.py): every argument that may
 * differ between ranks is given as "A|B|..." (rank r takes the r-th alternative, the last one when
 * there are fewer; "@null" is NULL). Rank 0 prints one JSON line per rank: its rank, the return code
 * and mtc_error() of the call, and what it read.
 *
 *   probe create SPEC [TIMER [WAIT [NULLOUT]]]
 *                                      mtc_create_ex (out NULL where NULLOUT is 1), then (when every
 *                                      rank failed alike) a barrier and mtc_create with "skampi:pp=5":
 *                                      the ranks are still in step
 *   probe to_global TIME               a clock ("skampi:pp=5"), then mtc_to_global(clk, TIME) */
#include <mpitempo/clock.h>

#include <math.h>
#include <stdarg.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *pick(const char *alts, int rank, char *buf, size_t len)
{
    snprintf(buf, len, "%s", alts);
    char *p = buf, *bar;
    for (int i = 0; i < rank && (bar = strchr(p, '|')); i++) p = bar + 1;
    if ((bar = strchr(p, '|'))) *bar = 0;
    return strcmp(p, "@null") == 0 ? NULL : p;
}

/* the line of this rank, built in a buffer (rank 0 prints every rank's: lines never interleave) */
#define LINE 4096
static char line[LINE];
static size_t used;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + used, LINE - used, fmt, ap);
    va_end(ap);
    if (n > 0) used = used + (size_t)n < LINE ? used + (size_t)n : LINE - 1;
}

static void json_str(const char *s)
{
    put("\"");
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') put("\\%c", ch);
        else if (ch < 0x20) put("\\u%04x", ch);
        else put("%c", ch);
    }
    put("\"");
}

static void num(double v)
{
    if (isnan(v)) put("\"nan\"");
    else if (isinf(v)) put(v > 0 ? "\"inf\"" : "\"-inf\"");
    else put("%.17g", v);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char b1[1024], b2[256], b3[64];
    int rc = -1, after = -1, agreed = -1;
    double value = NAN;
    char err[2048] = "";
    mtc_clock_t *clk = NULL;
    if (argc >= 3 && strcmp(argv[1], "create") == 0) {
        mtc_options_t opt = {0};
        const char *spec = pick(argv[2], rank, b1, sizeof b1);
        opt.timer = argc > 3 ? pick(argv[3], rank, b2, sizeof b2) : NULL;
        opt.wait = argc > 4 ? atoi(pick(argv[4], rank, b3, sizeof b3)) : 0;
        int nullout = argc > 5 ? atoi(pick(argv[5], rank, b3, sizeof b3)) : 0;
        rc = mtc_create_ex(MPI_COMM_WORLD, spec, &opt, nullout ? NULL : &clk);
        snprintf(err, sizeof err, "%s", mtc_error());
        if (rc == MTC_OK) mtc_free(&clk);
        /* did every rank return? the same code? can they go on together? */
        int lo = rc, hi = rc;
        MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        agreed = lo == hi;
        if (agreed && rc != MTC_OK) {
            MPI_Barrier(MPI_COMM_WORLD);
            after = mtc_create(MPI_COMM_WORLD, "skampi:pp=5", &clk);
            mtc_free(&clk);
        }
    } else if (argc == 3 && strcmp(argv[1], "to_global") == 0) {
        rc = mtc_create(MPI_COMM_WORLD, "skampi:pp=5", &clk);
        if (rc == MTC_OK) {
            value = mtc_to_global(clk, strtod(pick(argv[2], rank, b1, sizeof b1), NULL));
            snprintf(err, sizeof err, "%s", mtc_error());
            mtc_free(&clk);
        } else {
            snprintf(err, sizeof err, "%s", mtc_error());
        }
    } else {
        if (rank == 0) fprintf(stderr, "usage: probe create SPEC [TIMER [WAIT [NULLOUT]]] | probe to_global TIME\n");
        MPI_Finalize();
        return 2;
    }
    put("{\"rank\": %d, \"rc\": %d, \"agreed\": %d, \"after\": %d, \"value\": ", rank, rc, agreed, after);
    num(value);
    put(", \"err\": ");
    json_str(err);
    put("}");
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *all = rank == 0 ? malloc((size_t)size * LINE) : NULL;
    MPI_Gather(line, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < size; r++) printf("%s\n", all + (size_t)r * LINE);
    free(all);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
