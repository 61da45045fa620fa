/* mpitempo: shared-CPU detection (see cpushare.h). */
#define _GNU_SOURCE
#include "run/cpushare.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the scheduler's run delay of this thread (ns), -1 when the kernel does not report it */
static double run_delay_ns(void)
{
    char buf[128];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    unsigned long long oncpu, delay;
    if (sscanf(buf, "%llu %llu", &oncpu, &delay) != 2) return -1;
    return (double)delay;
}

/* spin until dur_s of CLOCK_MONOTONIC have passed since w0, noting the CPUs run on */
static double spin_until(double w0, double dur_s, mt_cpushare_t *out)
{
    double w = now_s(CLOCK_MONOTONIC);
    volatile unsigned long sink = 0;
    while (w - w0 < dur_s) {
        for (int i = 0; i < 2000; i++) sink += (unsigned long)i;
        int cpu = sched_getcpu();
        if (cpu >= 0 && cpu < MT_CPUSHARE_MAXCPU && !out->seen[cpu]) {
            out->seen[cpu] = 1;
            out->ncpus_seen++;
        }
        w = now_s(CLOCK_MONOTONIC);
    }
    (void)sink;
    return w;
}

static void measure(double w0, double w, double c0, double d0, mt_cpushare_t *out)
{
    double c = now_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    double d1 = run_delay_ns();
    out->wall_s = w - w0;
    out->share = out->wall_s > 0 ? c / out->wall_s : 1.0;
    out->run_delay_share = d0 >= 0 && d1 >= d0 && out->wall_s > 0 ? 1e-9 * (d1 - d0) / out->wall_s : -1;
}

void mt_cpushare_probe(double dur_s, double ext_s, mt_cpushare_t *out)
{
    memset(out, 0, sizeof *out);
    double d0 = run_delay_ns();
    double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
    double w = spin_until(w0, dur_s, out);
    measure(w0, w, c0, d0, out);
    if (ext_s > dur_s && mt_cpushare_suspect(out->share, out->run_delay_share)) {
        /* the first window is a few time slices: the share a scheduler gives a task that just woke
         * depends on its history (EEVDF's lag), from a third to four fifths beside a busy process;
         * the longer window reads the steady share */
        out->first_share = out->share;
        out->first_run_delay_share = out->run_delay_share;
        out->extended = 1;
        w = spin_until(w0, ext_s, out);
        measure(w0, w, c0, d0, out);
    }
}

int mt_cpushare_suspect(double share, double run_delay_share)
{
    return share < MT_CPUSHARE_MIN || run_delay_share >= MT_RUNDELAY_MIN;
}

int mt_cpushare_low(double share, double run_delay_share)
{
    if (share < MT_CPUSHARE_GROSS) return 1;
    if (!(share < MT_CPUSHARE_MIN)) return 0;
    return run_delay_share < 0 || run_delay_share >= MT_RUNDELAY_MIN;
}

int mt_cpulist_parse(const char *s, unsigned char *bits, int n)
{
    memset(bits, 0, (size_t)n);
    int count = 0;
    const char *p = s;
    while (*p) {
        char *e;
        long a = strtol(p, &e, 10), b;
        if (e == p || a < 0) return -1;
        p = e;
        if (*p == '-') {
            b = strtol(p + 1, &e, 10);
            if (e == p + 1 || b < a) return -1;
            p = e;
        } else {
            b = a;
        }
        for (long i = a; i <= b && i < n; i++)
            if (!bits[i]) {
                bits[i] = 1;
                count++;
            }
        if (*p == ',') p++;
        else if (*p) return -1;
    }
    return count;
}

int mt_affinity_overlap(int nranks, const int *host, const unsigned char *bits, size_t stride)
{
    for (int i = 0; i < nranks; i++)
        for (int j = i + 1; j < nranks; j++) {
            if (host[i] != host[j]) continue;
            const unsigned char *a = bits + (size_t)i * stride, *b = bits + (size_t)j * stride;
            for (size_t k = 0; k < stride; k++)
                if (a[k] && b[k]) return 1;
        }
    return 0;
}
