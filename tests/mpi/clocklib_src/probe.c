/* A test program of libmpitempo-clock (tests/mpi/test_clocklib_mpi.py): every argument that may
 * differ between ranks is given as "A|B|..." (rank r takes the r-th alternative, the last one when
 * there are fewer; "@null" is NULL). Each rank prints one JSON line: its rank, the return code and
 * mtc_error() of the call, and what it read.
 *
 *   probe create SPEC [TIMER [WAIT]]   mtc_create_ex, then (when every rank failed alike) a barrier
 *                                      and mtc_create with "skampi:pp=5": the ranks are still in step
 *   probe to_global TIME               a clock ("skampi:pp=5"), then mtc_to_global(clk, TIME) */
#include <mpitempo/clock.h>

#include <math.h>
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

static void json_str(const char *s)
{
    putchar('"');
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch < 0x20) printf("\\u%04x", ch);
        else putchar(ch);
    }
    putchar('"');
}

static void num(double v)
{
    if (isnan(v)) printf("\"nan\"");
    else if (isinf(v)) printf(v > 0 ? "\"inf\"" : "\"-inf\"");
    else printf("%.17g", v);
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
        rc = mtc_create_ex(MPI_COMM_WORLD, spec, &opt, &clk);
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
        if (rank == 0) fprintf(stderr, "usage: probe create SPEC [TIMER [WAIT]] | probe to_global TIME\n");
        MPI_Finalize();
        return 2;
    }
    printf("{\"rank\": %d, \"rc\": %d, \"agreed\": %d, \"after\": %d, \"value\": ", rank, rc, agreed, after);
    num(value);
    printf(", \"err\": ");
    json_str(err);
    printf("}\n");
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
