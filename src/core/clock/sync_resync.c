/* mpitempo: re-synchronisation by age and per-rank slope decisions for
 * mpitempo-bench (sync once per mpirun; re-sync only when the model
 * is older than a limit). */
#include "base/mt_mpi.h"
#include "base/mt_common.h"
#include "clock/sync.h"

#include <stdlib.h>

int mt_sync_resync_if_old(const mt_sync_spec_t *spec, MPI_Comm comm, const mt_baseclock_t *b, int lazy,
                          double max_age_s, double *t_synced, mt_sync_result_t *res, int *did, char *err)
{
    int rank, go = 0;
    *did = 0;
    mt_check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    mt_clock_t in;
    mt_clock_init(&in, b);
    if (rank == 0) go = max_age_s > 0 && mt_clock_now(&in) - *t_synced > max_age_s;
    mt_check_mpi(MPI_Bcast(&go, 1, MPI_INT, 0, comm), "MPI_Bcast");
    if (!go) return MT_OK;
    mt_sync_result_t r;
    int rc = mt_sync_run(spec, comm, &in, lazy, &r, err);
    if (rc != MT_OK) return rc;
    double d = res->duration_s; /* meta.json's duration_s stays the first sync's (max over ranks) */
    *res = r;
    res->duration_s = d;
    *t_synced = mt_clock_now(&in);
    *did = 1;
    return MT_OK;
}

int mt_sync_gather_slopes(MPI_Comm comm, const mt_sync_result_t *res, int *states)
{
    int mine = res->st.slope_state;
    mt_check_mpi(MPI_Gather(&mine, 1, MPI_INT, states, 1, MPI_INT, 0, comm), "MPI_Gather");
    return MT_OK;
}

void mt_sync_write_slopes(mt_json_t *j, const int *states, int n)
{
    mt_json_key(j, "slope_per_rank");
    mt_json_arr_begin(j);
    for (int i = 0; i < n; i++)
        mt_json_str(j, states[i] == MT_SLOPE_KEPT ? "kept" : states[i] == MT_SLOPE_DROPPED ? "dropped" : "none");
    mt_json_arr_end(j);
}
