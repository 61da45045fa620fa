/* libmpitempo-clock through its public API only (mpitempo/clock.h): bad input
 * returns an error code with a message and never crashes; the conversion of
 * local to global time is the model the clock reports. Runs on 2 ranks
 * (MPI_COMM_SELF is the communicator of size 1). */
#include <mpitempo/clock.h>

#include "mt_test.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define HAS(msg, part) CHECK(strstr((msg), (part)) != NULL)

int main(int argc, char **argv)
{
    mtc_clock_t *clk = (mtc_clock_t *)1;   /* must be reset to NULL on failure */
    /* before MPI_Init */
    CHECK(mtc_create(MPI_COMM_WORLD, "hca3", &clk) == MTC_EMPI);
    HAS(mtc_error(), "not initialised");
    CHECK(clk == NULL);
    /* the pure, local calls on NULL */
    CHECK(isnan(mtc_now(NULL)) && isnan(mtc_local_now(NULL)) && isnan(mtc_to_global(NULL, 1.0)));
    CHECK(isnan(mtc_sync_duration(NULL)) && mtc_spec(NULL) == NULL);
    CHECK(mtc_free(NULL) == MTC_EINVAL);
    HAS(mtc_error(), "NULL");
    CHECK(mtc_resync(NULL) == MTC_EINVAL && mtc_accuracy(NULL, NULL, NULL) == MTC_EINVAL);
    char ver[32];
    snprintf(ver, sizeof ver, "%d.%d.%d", MTC_VERSION_MAJOR, MTC_VERSION_MINOR, MTC_VERSION_PATCH);
    CHECK_STR(mtc_version(), ver);

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "test_clocklib: run me on 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    /* bad communicators (local checks: the same communicator on every rank) and pointers (agreed) */
    CHECK(mtc_create(MPI_COMM_WORLD, "hca3", NULL) == MTC_EINVAL);
    HAS(mtc_error(), "mtc_create: the output pointer (out) is NULL");
    CHECK(mtc_create(MPI_COMM_NULL, "hca3", &clk) == MTC_EINVAL && clk == NULL);
    HAS(mtc_error(), "MPI_COMM_NULL");
    CHECK(mtc_create(MPI_COMM_SELF, "hca3", &clk) == MTC_EINVAL && clk == NULL);
    HAS(mtc_error(), "1 rank");
    /* bad specs, timers, options: collective, every rank gets the same error */
    CHECK(mtc_create(MPI_COMM_WORLD, "bogus", &clk) == MTC_EINVAL && clk == NULL);
    HAS(mtc_error(), "mpitempo-clock: mtc_create: sync_spec: ");
    HAS(mtc_error(), "'bogus'");
    HAS(mtc_error(), "allowed: ");
    CHECK(mtc_create(MPI_COMM_WORLD, "hca3:fitpts=1", &clk) == MTC_EINVAL && clk == NULL);
    HAS(mtc_error(), "fitpts");
    CHECK(mtc_create(MPI_COMM_WORLD, "none", &clk) == MTC_EINVAL && clk == NULL);
    HAS(mtc_error(), "'none'");
    /* a spec bad on one rank only: both ranks fail alike, nobody hangs in the sync */
    CHECK(mtc_create(MPI_COMM_WORLD, rank ? "hca3:pp=0" : "hca3", &clk) == MTC_EINVAL && clk == NULL);
    HAS(mtc_error(), "pp");
    /* valid specs that differ: both ranks fail alike, before any sync */
    CHECK(mtc_create(MPI_COMM_WORLD, rank ? "jk" : "hca3", &clk) == MTC_EINVAL && clk == NULL);
    HAS(mtc_error(), "mtc_create: the ranks gave different sync_spec: rank 0 'hca3' (hca3:");
    mtc_options_t opt = {.timer = "sundial"};
    CHECK(mtc_create_ex(MPI_COMM_WORLD, "hca3", &opt, &clk) == MTC_EINVAL && clk == NULL);
    HAS(mtc_error(), "'sundial'");
    opt = (mtc_options_t){.wait = 7};
    CHECK(mtc_create_ex(MPI_COMM_WORLD, "hca3", &opt, &clk) == MTC_EINVAL && clk == NULL);
    HAS(mtc_error(), "wait mode 7");

    /* a real clock: small sync, every call */
    opt = (mtc_options_t){.timer = "monotonic", .wait = 0};
    CHECK(mtc_create_ex(MPI_COMM_WORLD, "hca3:fitpts=10,pp=10", &opt, &clk) == MTC_OK);
    CHECK(clk != NULL);
    if (clk) {
        CHECK_STR(mtc_error(), "");
        CHECK(strncmp(mtc_spec(clk), "hca3:fitpts=10,pp=10,", 21) == 0);
        CHECK(mtc_sync_duration(clk) > 0 && mtc_sync_duration(clk) < 60);
        /* local -> global is the model: rank 0 is the reference (identity); on rank 1 it is affine
         * with a slope within 1e-3 of 1 */
        double g0 = mtc_to_global(clk, 0.0), g1 = mtc_to_global(clk, 1.0), g2 = mtc_to_global(clk, 2.0);
        if (rank == 0) CHECK(g0 == 0.0 && g1 == 1.0 && g2 == 2.0);
        CHECK_CLOSE(g2 - g1, g1 - g0, 1e-9);
        CHECK_CLOSE(g1 - g0, 1.0, 1e-3);
        /* non-finite local times: NaN and one message on every rank (the model alone gives inf or NaN) */
        CHECK(isnan(mtc_to_global(clk, INFINITY)));
        CHECK_STR(mtc_error(), "mpitempo-clock: mtc_to_global: local_s is inf; give a finite time in seconds");
        CHECK(isnan(mtc_to_global(clk, -NAN)));
        CHECK_STR(mtc_error(), "mpitempo-clock: mtc_to_global: local_s is NaN; give a finite time in seconds");
        double l = mtc_local_now(clk), n = mtc_now(clk), l2 = mtc_local_now(clk);
        CHECK(mtc_to_global(clk, l) <= n && n <= mtc_to_global(clk, l2));
        double mx = -1, md = -1;
        CHECK(mtc_accuracy(clk, &mx, &md) == MTC_OK);
        CHECK(mx >= 0 && md >= 0 && md <= mx && mx < 1e-3);
        double mx0 = mx;
        MPI_Bcast(&mx0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        CHECK(mx0 == mx);   /* every rank gets rank 0's summary */
        CHECK(mtc_accuracy(clk, NULL, NULL) == MTC_OK);
        CHECK(mtc_resync(clk) == MTC_OK);
        CHECK(mtc_accuracy(clk, &mx, NULL) == MTC_OK && mx < 1e-3);
        CHECK(mtc_free(&clk) == MTC_OK && clk == NULL);
        CHECK(mtc_free(&clk) == MTC_OK);   /* freeing NULL again is harmless */
    }
    /* two clocks at once, on a sub-communicator too */
    mtc_clock_t *a = NULL, *b = NULL;
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    CHECK(mtc_create(MPI_COMM_WORLD, "skampi:pp=5", &a) == MTC_OK);
    CHECK(mtc_create(dup, "jk:fitpts=5,pp=5", &b) == MTC_OK);
    CHECK(a && b && strncmp(mtc_spec(a), "skampi", 6) == 0 && strncmp(mtc_spec(b), "jk", 2) == 0);
    mtc_free(&b);
    mtc_free(&a);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    /* after MPI_Finalize */
    CHECK(mtc_create(MPI_COMM_WORLD, "hca3", &clk) == MTC_EMPI);
    HAS(mtc_error(), "finalised");
    if (rank == 0) TEST_DONE();
    return mt_test_failures ? 1 : 0;
}
