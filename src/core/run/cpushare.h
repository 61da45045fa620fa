/* mpitempo: do the ranks of a job share a CPU? Two pieces of evidence, both
 * written into meta.json ("shared_cpu", and per rank "cpu_share", "cpus_seen"):
 *   - the recorded affinity: two ranks on one host whose allowed CPU sets
 *     intersect CAN be scheduled onto one CPU (unbound ranks always can);
 *   - a short start-up check: every rank spins for 20 ms at the same time
 *     and measures the share of that wall time it got as CPU time. A rank that
 *     shares its CPU with another rank or with another busy process gets
 *     clearly less than all of it; a rank whose 20 ms look suspect spins on
 *     to 200 ms, since a few time slices can read anything from a third to
 *     four fifths of the CPU beside a busy process.
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
#define MT_CPUSHARE_CHECK_S 0.02 /* duration of the start-up check (s) ... */
#define MT_CPUSHARE_EXT_S 0.2    /* ... extended to this (s, in all) on a rank whose first window is suspect
                                    (share below MT_CPUSHARE_MIN or run delay at least MT_RUNDELAY_MIN) */

typedef struct mt_cpushare {
    double wall_s;  /* duration of the check (s) */
    double share;   /* CPU time of this thread / wall time, in [0, 1] (slightly above 1 by rounding) */
    double run_delay_share; /* time runnable but waiting for its CPU / wall time (the scheduler's
                               run_delay, /proc/thread-self/schedstat); -1 when the kernel has none */
    int ncpus_seen; /* distinct CPUs the check ran on (sampled with sched_getcpu) */
    int extended;   /* 1: the first window was suspect and the check ran on to ext_s */
    double first_share, first_run_delay_share; /* the first window's values when extended */
    unsigned char seen[MT_CPUSHARE_MAXCPU];
} mt_cpushare_t;

/* Spin for dur_s seconds of CLOCK_MONOTONIC, measuring CLOCK_THREAD_CPUTIME_ID and the run delay;
 * when that first window is suspect (mt_cpushare_suspect) and ext_s > dur_s, go on spinning until ext_s
 * and report the whole window (a window of a few time slices reads anything from a third to four
 * fifths of the CPU beside a busy process, depending on the scheduler's state; ext_s reads about half).
 * A share below 1 has two causes the run delay tells apart: another runnable task on the rank's CPU
 * (the rank waits in the run queue: run delay about 1 - share) and time the CPU was not the guest's
 * or went to interrupts (a hypervisor's steal time: run delay about 0). */
void mt_cpushare_probe(double dur_s, double ext_s, mt_cpushare_t *out);

/* Pure parts (unit tested). Did a rank with this CPU share and run-delay share (-1: unknown) share
 * its CPU? (the thresholds above) */
int mt_cpushare_low(double share, double run_delay_share);
/* Is a first window with these values worth a longer look? (below the share threshold, or waited) */
int mt_cpushare_suspect(double share, double run_delay_share);
/* Parse a CPU list "0-3,8" into bits[0..n-1] (0/1);
 * returns the number of CPUs set, or -1 when the text is malformed. */
int mt_cpulist_parse(const char *s, unsigned char *bits, int n);
/* host[i]: a host id per rank; bits: nranks rows of `stride` bytes (0/1, the
 * allowed CPUs of each rank). 1 when two ranks of one host may run on a
 * common CPU, else 0. */
int mt_affinity_overlap(int nranks, const int *host, const unsigned char *bits, size_t stride);

#endif
