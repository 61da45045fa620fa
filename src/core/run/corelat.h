/* mpitempo: a cheap probe of the core-to-core latency between the CPUs of two ranks of one
 * host: a cache-line ping-pong (one C11 atomic flag in MPI shared memory) between the first
 * two ranks of rank 0's host, taken before and after the measurements and written to meta.json
 * ("core_latency"). On a VM the hypervisor moves vCPUs between near and distant physical
 * cores (round trips of ~100 ns vs ~450 ns here), which changes the speed of intra-node MPI
 * while compute speed stays the same: a recorded factor that can explain levels of run
 * medians. Skipped (null) when oversubscribed or when fewer than two ranks share rank 0's host;
 * abandoned (null) when one round trip takes longer than MT_CORELAT_GIVEUP_S (descheduled). */
#ifndef MT_CORELAT_H
#define MT_CORELAT_H

#include <mpi.h>

#define MT_CORELAT_ROUNDS 2000
#define MT_CORELAT_GIVEUP_S 0.005

typedef struct mt_corelat {
    int done;          /* 1 when measured */
    int ranks[2];      /* world ranks of the pair */
    double rtt_median_s, rtt_min_s;
    int rounds;
} mt_corelat_t;

/* Collective over comm. The result is valid on the world rank 0 (the writer's side). */
void mt_corelat_probe(MPI_Comm comm, int skip, mt_corelat_t *out);

#endif
