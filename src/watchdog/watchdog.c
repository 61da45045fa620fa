/* mpitempo-watchdog: the process between mpitempo and every MPI job it launches, so that no rank
 * outlives mpitempo. The same contract as python/mpitempo/runner/watchdog.py (whose docstring
 * describes it in full), without an interpreter to start: mpitempo uses this program when the core's
 * build has it, and the Python module otherwise.
 *
 *   mpitempo-watchdog [--fd R] [--grace S] [--shm-dir D] -- LAUNCHER ARGS...
 *
 *  - a child subreaper (PR_SET_CHILD_SUBREAPER): every process of the job stays below it;
 *  - starts the launcher with PR_SET_PDEATHSIG = SIGTERM and default signal dispositions;
 *  - R is the read end of a pipe whose write end only mpitempo holds: its hang-up means mpitempo is
 *    gone, and the job is stopped; so is it on SIGTERM, SIGINT or SIGHUP;
 *  - stopping: SIGTERM to the launcher, then to every process below the watchdog, SIGKILL to what is
 *    left after the grace period;
 *  - when the launcher exits by itself, what it left behind gets the grace period, then is killed;
 *  - when no process of the job is left, the /dev/shm files the job created and no process holds are
 *    removed (the rules of leftover_shm in the Python module), and the watchdog exits with the
 *    launcher's status (re-raising the launcher's signal when it was killed by one).
 * Event-driven: signals arrive on a signalfd, polled with the pipe (at most one idle wake-up a second). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* /dev/shm file names of MPI libraries (MPICH ch4/ch3, Open MPI 4 vader, Open MPI 5 sm, Open MPI's
 * posix shmem, UCX's posix transport): a new file of such a name that no process holds is the job's */
static const char *const MPI_SHM[] = {"mpich_shm_", "mpich_shar_tmp", "vader_segment.", "sm_segment.",
                                      "open_mpi.", "ucx_shm_posix_"};

/* ------------------------------------------------------------------------------- small containers */

typedef struct {
    char **name;
    ino_t *ino;
    size_t n, cap;
} names_t;

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("mpitempo watchdog: out of memory\n", stderr);
        _exit(70);
    }
    return q;
}

static ssize_t names_find(const names_t *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->name[i], name) == 0) return (ssize_t)i;
    return -1;
}

static void names_add(names_t *s, const char *name, ino_t ino)
{
    if (names_find(s, name) >= 0) return;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->name = xrealloc(s->name, s->cap * sizeof *s->name);
        s->ino = xrealloc(s->ino, s->cap * sizeof *s->ino);
    }
    size_t l = strlen(name) + 1;
    s->name[s->n] = memcpy(xrealloc(NULL, l), name, l);
    s->ino[s->n++] = ino;
}

static void names_free(names_t *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->name[i]);
    free(s->name);
    free(s->ino);
    memset(s, 0, sizeof *s);
}

typedef struct {
    pid_t *v;
    size_t n, cap;
} pids_t;

static void pids_add(pids_t *s, pid_t p)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = p;
}

static int pids_has(const pids_t *s, pid_t p)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == p) return 1;
    return 0;
}

/* ------------------------------------------------------------------------------ /proc and /dev/shm */

/* the state letter and parent of a process from /proc/PID/stat (after the last ')' of the name) */
static int proc_stat(pid_t pid, char *state, pid_t *ppid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    int pp;
    char st;
    if (!rp || sscanf(rp + 1, " %c %d", &st, &pp) != 2) return -1;
    *state = st;
    *ppid = (pid_t)pp;
    return 0;
}

static int alive(pid_t pid)
{
    char st;
    pid_t pp;
    return proc_stat(pid, &st, &pp) == 0 && st != 'Z';
}

/* every process of the system: pid and parent */
static void all_procs(pids_t *pid, pids_t *ppid)
{
    DIR *d = opendir("/proc");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long v = strtol(e->d_name, &end, 10);
        if (*end || v <= 0) continue;
        char st;
        pid_t pp;
        if (proc_stat((pid_t)v, &st, &pp) != 0) continue;
        pids_add(pid, (pid_t)v);
        pids_add(ppid, pp);
    }
    closedir(d);
}

/* the live processes below root */
static void descendants_alive(pid_t root, pids_t *out)
{
    pids_t pid = {0}, ppid = {0}, todo = {0}, below = {0};
    all_procs(&pid, &ppid);
    pids_add(&todo, root);
    while (todo.n) {
        pid_t p = todo.v[--todo.n];
        for (size_t i = 0; i < pid.n; i++)
            if (ppid.v[i] == p && !pids_has(&below, pid.v[i])) {
                pids_add(&below, pid.v[i]);
                pids_add(&todo, pid.v[i]);
            }
    }
    for (size_t i = 0; i < below.n; i++)
        if (alive(below.v[i])) pids_add(out, below.v[i]);
    free(pid.v);
    free(ppid.v);
    free(todo.v);
    free(below.v);
}

static const char *shm_dir = "/dev/shm";

/* the name within shm_dir of a path (NULL when the path is not directly in it, or deleted) */
static const char *in_shm(const char *path)
{
    size_t l = strlen(shm_dir);
    while (l > 1 && shm_dir[l - 1] == '/') l--;
    if (strncmp(path, shm_dir, l) != 0 || path[l] != '/') return NULL;
    const char *name = path + l + 1;
    size_t nl = strlen(name);
    static const char del[] = " (deleted)";
    if (!*name || strchr(name, '/') || (nl >= sizeof del - 1 && strcmp(name + nl - (sizeof del - 1), del) == 0))
        return NULL;
    return name;
}

/* the names of shm_dir files that these processes map or hold open, added to out */
static void mapped_shm(const pids_t *procs, names_t *out)
{
    char path[64], line[PATH_MAX + 256], target[PATH_MAX];
    for (size_t i = 0; i < procs->n; i++) {
        snprintf(path, sizeof path, "/proc/%d/maps", (int)procs->v[i]);
        FILE *f = fopen(path, "re");
        if (f) {
            while (fgets(line, sizeof line, f)) {
                line[strcspn(line, "\n")] = '\0';
                /* address perms offset dev inode pathname: the path is after the 5th field */
                char *p = line;
                for (int k = 0; k < 5 && p; k++) {
                    p = strchr(p, ' ');
                    if (p) p += strspn(p, " ");
                }
                const char *name = p && *p ? in_shm(p) : NULL;
                if (name) names_add(out, name, 0);
            }
            fclose(f);
        }
        snprintf(path, sizeof path, "/proc/%d/fd", (int)procs->v[i]);
        DIR *d = opendir(path);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char link[320];
            snprintf(link, sizeof link, "/proc/%d/fd/%s", (int)procs->v[i], e->d_name);
            ssize_t n = readlink(link, target, sizeof target - 1);
            if (n <= 0) continue;
            target[n] = '\0';
            const char *name = in_shm(target);
            if (name) names_add(out, name, 0);
        }
        closedir(d);
    }
}

/* the regular files of shm_dir owned by this user, with their inodes */
static void shm_snapshot(names_t *out)
{
    DIR *d = opendir(shm_dir);
    if (!d) return;
    uid_t uid = getuid();
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (st.st_uid == uid && S_ISREG(st.st_mode)) names_add(out, e->d_name, st.st_ino);
    }
    closedir(d);
}

static int mpi_named(const char *name)
{
    for (size_t i = 0; i < sizeof MPI_SHM / sizeof *MPI_SHM; i++)
        if (strncmp(name, MPI_SHM[i], strlen(MPI_SHM[i])) == 0) return 1;
    return 0;
}

/* remove the files new since `before` that no live process holds and that the job mapped or that
 * are named as an MPI library names its segments */
static void remove_leftover_shm(const names_t *before, const names_t *job_mapped)
{
    names_t after = {0}, fresh = {0}, in_use = {0};
    shm_snapshot(&after);
    for (size_t i = 0; i < after.n; i++) {
        ssize_t b = names_find(before, after.name[i]);
        if (b < 0 || before->ino[b] != after.ino[i]) names_add(&fresh, after.name[i], after.ino[i]);
    }
    if (fresh.n) {
        pids_t pid = {0}, ppid = {0}, others = {0};
        all_procs(&pid, &ppid);
        for (size_t i = 0; i < pid.n; i++)
            if (pid.v[i] != getpid()) pids_add(&others, pid.v[i]);
        mapped_shm(&others, &in_use);
        free(pid.v);
        free(ppid.v);
        free(others.v);
        int dfd = open(shm_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        for (size_t i = 0; dfd >= 0 && i < fresh.n; i++) {
            const char *name = fresh.name[i];
            if (names_find(&in_use, name) >= 0) continue;
            if (names_find(job_mapped, name) < 0 && !mpi_named(name)) continue;
            struct stat st;
            if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == fresh.ino[i] && st.st_uid == getuid())
                unlinkat(dfd, name, 0);
        }
        if (dfd >= 0) close(dfd);
    }
    names_free(&after);
    names_free(&fresh);
    names_free(&in_use);
}

/* -------------------------------------------------------------------------------------- the job */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static pid_t me, child = -1;
static int have_status, status;
static const char *stop_why;
static int sfd = -1;
static names_t job_mapped;

static void reap(void)
{
    int st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0)
        if (p == child && !have_status) {
            have_status = 1;
            status = st;
        }
}

static void left(pids_t *out)
{
    reap();
    out->n = 0;
    descendants_alive(me, out);
}

/* read the pending signals of the signalfd: SIGCHLD reaps, the others stop the job */
static void drain_signals(void)
{
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGCHLD) continue;
        if (!stop_why) stop_why = si.ssi_signo == SIGTERM ? "SIGTERM" : si.ssi_signo == SIGINT ? "SIGINT" : "SIGHUP";
    }
    reap();
}

static void kill_all(double grace)
{
    pids_t procs = {0};
    left(&procs);
    mapped_shm(&procs, &job_mapped);
    if (pids_has(&procs, child)) kill(child, SIGTERM); /* the launcher first: it forwards it to its ranks */
    for (size_t i = 0; i < procs.n; i++)
        if (procs.v[i] != child) kill(procs.v[i], SIGTERM);
    double deadline = now_s() + grace;
    while (now_s() < deadline) {
        left(&procs);
        if (!procs.n) goto done;
        mapped_shm(&procs, &job_mapped);
        nap(0.05);
    }
    for (int k = 0; k < 100; k++) { /* SIGKILL until nothing is left (a process may fork while it dies) */
        left(&procs);
        if (!procs.n) break;
        for (size_t i = 0; i < procs.n; i++) kill(procs.v[i], SIGKILL);
        nap(0.05);
    }
done:
    free(procs.v);
}

static int parent_gone(int fd)
{
    if (fd < 0) return 0;
    struct pollfd p = {fd, POLLIN | POLLHUP, 0};
    return poll(&p, 1, 0) > 0;
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("mpitempo watchdog: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 2;
}

int main(int argc, char **argv)
{
    int parent_fd = -1;
    double grace = 3.0;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
        if (i + 1 >= argc) return usage_error("option %s needs a value", argv[i]);
        char *end;
        if (strcmp(argv[i], "--fd") == 0) {
            long v = strtol(argv[i + 1], &end, 10);
            if (*end || end == argv[i + 1] || v < 0 || v > INT_MAX) return usage_error("bad --fd %s", argv[i + 1]);
            parent_fd = (int)v;
        } else if (strcmp(argv[i], "--grace") == 0) {
            grace = strtod(argv[i + 1], &end);
            if (*end || end == argv[i + 1] || !(grace >= 0 && grace < 1e6)) return usage_error("bad --grace %s", argv[i + 1]);
        } else if (strcmp(argv[i], "--shm-dir") == 0) {
            shm_dir = argv[i + 1];
        } else {
            return usage_error("unknown option %s", argv[i]);
        }
    }
    if (i + 1 >= argc) return usage_error("%s", "no command after --");
    char **cmd = argv + i + 1;

    me = getpid();
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    sigset_t mask, old;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, &old);
    sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) {
        perror("mpitempo watchdog: signalfd");
        return 70;
    }
    if (parent_gone(parent_fd)) return 128 + SIGTERM; /* mpitempo died before the job started */
    names_t before = {0};
    shm_snapshot(&before);

    fflush(NULL);
    child = fork();
    if (child < 0) {
        fprintf(stderr, "mpitempo: cannot start '%s': %s\n", cmd[0], strerror(errno));
        return 127;
    }
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        if (getppid() != me) _exit(128 + SIGTERM); /* the watchdog died before the line above */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGCHLD};
        for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) sigaction(sigs[k], &dfl, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
#ifdef SYS_close_range
        if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
#endif
            if (parent_fd >= 0) close(parent_fd);
        execvp(cmd[0], cmd);
        fprintf(stderr, "mpitempo: cannot start '%s': %s\n", cmd[0], strerror(errno));
        _exit(127);
    }

    struct pollfd pf[2] = {{sfd, POLLIN, 0}, {parent_fd, POLLIN | POLLHUP, 0}};
    nfds_t np = parent_fd >= 0 ? 2 : 1;
    while (!have_status && !stop_why) {
        if (poll(pf, np, 1000) > 0) {
            if (pf[0].revents) drain_signals();
            if (np == 2 && pf[1].revents) {
                stop_why = "the death of mpitempo";
                np = 1;
            }
        }
        reap();
    }
    pids_t procs = {0};
    left(&procs);
    if (!stop_why) {
        /* the launcher is gone: what it left behind gets the grace period to exit by itself, polled
         * at 1, 2, 4, ... ms up to 50 ms (its proxies usually exit within a few ms of it) */
        double deadline = now_s() + grace, wait = 0.001;
        while (procs.n && now_s() < deadline && !stop_why) {
            struct pollfd p1[2] = {{sfd, POLLIN, 0}, {parent_fd, POLLIN | POLLHUP, 0}};
            if (poll(p1, np, (int)(wait * 1000)) > 0) {
                if (p1[0].revents) drain_signals();
                if (np == 2 && p1[1].revents) {
                    stop_why = "the death of mpitempo";
                    np = 1;
                }
            }
            wait = wait * 2 < 0.05 ? wait * 2 : 0.05;
            left(&procs);
        }
    }
    if (procs.n) kill_all(grace);
    free(procs.v);
    reap();
    remove_leftover_shm(&before, &job_mapped);
    names_free(&before);
    names_free(&job_mapped);
    if (!have_status) return 128 + SIGKILL; /* cannot happen after kill_all, but never hang */
    fflush(NULL);
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        signal(sig, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        kill(getpid(), sig); /* exit as the launcher did: the parent sees the same signal */
        nap(1.0);
        return 128 + sig;
    }
    return WEXITSTATUS(status);
}
