#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/factors.h"
#include "run/cpushare.h"
#include "mt_test.h"

int main(void)
{
    unsigned char c[16] = {0};
    char out[128];
    mt_format_cpulist(c, 16, out, sizeof out);
    CHECK_STR(out, "");
    c[0] = 1;
    mt_format_cpulist(c, 16, out, sizeof out);
    CHECK_STR(out, "0");
    c[1] = c[2] = c[3] = 1;
    c[8] = 1;
    c[10] = c[11] = 1;
    mt_format_cpulist(c, 16, out, sizeof out);
    CHECK_STR(out, "0-3,8,10-11");
    c[15] = 1;
    mt_format_cpulist(c, 16, out, sizeof out);
    CHECK_STR(out, "0-3,8,10-11,15");
    char iso[64];
    mt_iso_now(iso, sizeof iso);
    CHECK(strlen(iso) == 27 && iso[4] == '-' && iso[10] == 'T' && iso[26] == 'Z');
    /* shared-CPU verdict of one rank: a low share counts when the rank waited for its CPU (or the
     * kernel does not say), or when it is below half whatever the cause */
    CHECK(mt_cpushare_low(0.95, 0.0) == 0);
    CHECK(mt_cpushare_low(0.95, 0.5) == 0);           /* enough CPU time: not shared */
    CHECK(mt_cpushare_low(0.6, 0.4) == 1);            /* a busy process on its CPU */
    CHECK(mt_cpushare_low(0.76, 0.01) == 0);          /* lost to the hypervisor, not to a task */
    CHECK(mt_cpushare_low(0.76, MT_RUNDELAY_MIN) == 1);
    CHECK(mt_cpushare_low(0.76, -1) == 1);            /* no schedstat: the share alone */
    CHECK(mt_cpushare_low(0.4, 0.0) == 1);            /* below the gross threshold */
    CHECK(mt_cpushare_low(MT_CPUSHARE_MIN, 0.2) == 0);
    /* shared-CPU detection: CPU lists and affinity overlap per host */
    unsigned char b[3 * 8];
    CHECK(mt_cpulist_parse("0-3,8", b, 8) == 4 && b[0] && b[3] && !b[4]);
    CHECK(mt_cpulist_parse("", b, 8) == 0);
    CHECK(mt_cpulist_parse("1-x", b, 8) == -1);
    CHECK(mt_cpulist_parse("3-1", b, 8) == -1);
    int host[3] = {0, 0, 1};
    mt_cpulist_parse("0", b, 8);
    mt_cpulist_parse("1", b + 8, 8);
    mt_cpulist_parse("0-1", b + 16, 8);
    CHECK(mt_affinity_overlap(3, host, b, 8) == 0); /* bound to 0 and 1; rank 2 is on another host */
    host[2] = 0;
    CHECK(mt_affinity_overlap(3, host, b, 8) == 1); /* rank 2 may run on CPU 0 or 1 */
    mt_cpulist_parse("0-7", b, 8);
    mt_cpulist_parse("0-7", b + 8, 8);
    CHECK(mt_affinity_overlap(2, host, b, 8) == 1); /* unbound ranks */
    /* the probe: a lone busy thread gets (nearly) all of the wall time unless
     * the machine is loaded; only its range is checked here */
    CHECK(mt_cpushare_suspect(0.95, 0.0) == 0);
    CHECK(mt_cpushare_suspect(0.95, MT_RUNDELAY_MIN) == 1); /* waited: look longer */
    CHECK(mt_cpushare_suspect(0.79, 0.0) == 1);
    CHECK(mt_cpushare_suspect(0.99, -1) == 0);
    mt_cpushare_t cs;
    mt_cpushare_probe(0.005, 0, &cs);
    CHECK(cs.wall_s >= 0.005 && cs.share > 0 && cs.share < 1.1 && cs.ncpus_seen >= 1 && !cs.extended);
    /* beside a busy process on its CPU the probe reads well below the threshold: the first window
     * waits (so it extends), the whole window reads about half. A child spins on this thread's CPU. */
    cpu_set_t one, old;
    int cpu = sched_getcpu();
    if (cpu >= 0 && sched_getaffinity(0, sizeof old, &old) == 0) {
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) == 0) {
            pid_t child = fork();
            if (child == 0) {
                volatile unsigned long x = 0;
                for (;;) x++;
            }
            CHECK(child > 0);
            usleep(50000); /* the child is running */
            mt_cpushare_probe(0.02, 0.2, &cs);
            kill(child, SIGKILL);
            waitpid(child, NULL, 0);
            sched_setaffinity(0, sizeof old, &old);
            CHECK(cs.extended == 1 && cs.wall_s >= 0.2 && cs.share < MT_CPUSHARE_MIN);
            CHECK(cs.run_delay_share < 0 || mt_cpushare_low(cs.share, cs.run_delay_share));
        }
    }
    TEST_DONE();
}
