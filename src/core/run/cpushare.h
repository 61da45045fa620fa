/* mpitempo: do the ranks of a job share a CPU? Two pieces of evidence, both
 * written into meta.json ("shared_cpu", and per rank "cpu_share", "cpus_seen"):
 *   - the recorded affinity: two ranks on one host whose allowed CPU sets
 *     intersect CAN be scheduled onto one CPU (unbound ranks always can);
 *   - a short start-up check: every rank spins for a few ms at the same time
 *     and measures the share of that wall time it got as CPU time. A rank that
 *     shares its CPU with another rank or with another busy process gets
 *     clearly less than all of it.
 * A run is marked shared when a rank's share is below MT_CPUSHARE_MIN (or the
 * job is oversubscribed). Timings of such runs may be inflated by time slices
 * (ms), whatever their validity flags say. */
#ifndef MT_CPUSHARE_H
#define MT_CPUSHARE_H

#include <stddef.h>

#define MT_CPUSHARE_MAXCPU 1024
#define MT_CPUSHARE_MIN 0.8     /* below this share of CPU time in the check, the rank shared its CPU ... */
#define MT_RUNDELAY_MIN 0.05    /* ... when it also waited in its CPU's run queue for this share of the check
                                   (or the kernel does not say): time lost without a run delay went to the
                                   hypervisor or to interrupts, not to a task on the rank's CPU */
#define MT_CPUSHARE_GROSS 0.5   /* below this share the run is marked shared whatever the cause */
#define MT_CPUSHARE_CHECK_S 0.02 /* duration of the start-up check (s) */

typedef struct mt_cpushare {
    double wall_s;  /* duration of the check (s) */
    double share;   /* CPU time of this thread / wall time, in [0, 1] (slightly above 1 by rounding) */
    double run_delay_share; /* time runnable but waiting for its CPU / wall time (the scheduler's
                               run_delay, /proc/thread-self/schedstat); -1 when the kernel has none */
    int ncpus_seen; /* distinct CPUs the check ran on (sampled with sched_getcpu) */
    unsigned char seen[MT_CPUSHARE_MAXCPU];
} mt_cpushare_t;

/* Spin for dur_s seconds of CLOCK_MONOTONIC, measuring CLOCK_THREAD_CPUTIME_ID and the run delay.
 * A share below 1 has two causes the run delay tells apart: another runnable task on the rank's CPU
 * (the rank waits in the run queue: run delay about 1 - share) and time the CPU was not the guest's
 * or went to interrupts (a hypervisor's steal time: run delay about 0). */
void mt_cpushare_probe(double dur_s, mt_cpushare_t *out);

/* Pure parts (unit tested). Did a rank with this CPU share and run-delay share (-1: unknown) share
 * its CPU? (the thresholds above) */
int mt_cpushare_low(double share, double run_delay_share);
/* Parse a CPU list "0-3,8" into bits[0..n-1] (0/1);
 * returns the number of CPUs set, or -1 when the text is malformed. */
int mt_cpulist_parse(const char *s, unsigned char *bits, int n);
/* host[i]: a host id per rank; bits: nranks rows of `stride` bytes (0/1, the
 * allowed CPUs of each rank). 1 when two ranks of one host may run on a
 * common CPU, else 0. */
int mt_affinity_overlap(int nranks, const int *host, const unsigned char *bits, size_t stride);

#endif
