/* A trial's process; see runner.h. Between fork and exec the child calls
 * only async-signal-safe functions: the worker has threads, and another of
 * them may have held the malloc lock at the moment of the fork. */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* What the child tells the parent when it cannot exec. */
typedef struct ExecFailure {
    int stage; /* STAGE_* */
    int err;   /* errno */
} ExecFailure;

enum { STAGE_CHDIR = 1, STAGE_EXEC = 2, STAGE_SETUP = 3 };

/* Writes all of buf, or gives up (the child has no one to tell). */
static void write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* Closes every descriptor from lo to hi (inclusive); hi < 0 means all the
 * way up, which the loop of kernels without close_range (before 5.9) takes
 * as up to loop_max. */
static void close_from(int lo, int hi, int loop_max)
{
    if (hi >= 0 && lo > hi)
        return;
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lo, hi < 0 ? ~0U : (unsigned)hi, 0) == 0)
        return;
#endif
    for (int fd = lo; fd <= (hi < 0 ? loop_max : hi); fd++)
        close(fd);
}

static void fail_child(int errfd, int stage)
{
    ExecFailure f = {stage, errno};
    write_all(errfd, &f, sizeof f);
    _exit(127);
}

/* In the child: set up and exec; never returns. */
static void child(const RunnerSpec *spec, int devnull, int out_w, int err_w, int errfd, int max_fd,
                  pid_t parent)
{
    setpgid(0, 0);
    /* A worker killed with -9 loses its trials anyway (the server retries
     * them elsewhere when the lease expires): the program must not run on
     * beside the retry. The signal comes when the forking thread ends, and
     * that thread lives until it reaped this process. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    /* The worker blocks SIGINT/SIGTERM in every thread and ignores SIGPIPE;
     * a mask and ignored signals survive exec, so undo both. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    int sigs[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* errfd is above 2 (the parent opened 0..2 before anything else), so
     * the dup2s below cannot clobber it. */
    if (dup2(devnull, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
        fail_child(errfd, STAGE_SETUP);
    close_from(3, errfd - 1, max_fd);
    close_from(errfd + 1, -1, max_fd);
    if (spec->cwd && spec->cwd[0] && chdir(spec->cwd) != 0)
        fail_child(errfd, STAGE_CHDIR);
    environ = (char **)spec->envp; /* execvp looks PATH up in the trial's environment */
    execvp(spec->argv[0], spec->argv);
    fail_child(errfd, STAGE_EXEC);
}

static void close_pair(int p[2])
{
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    p[0] = p[1] = -1;
}

int runner_start(const RunnerSpec *spec, Runner *r, char *why, size_t why_size)
{
    memset(r, 0, sizeof *r);
    r->out_fd = r->err_fd = r->pidfd = -1;
    int out[2] = {-1, -1}, err[2] = {-1, -1}, ex[2] = {-1, -1};
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    /* Close-on-exec everywhere: a trial started by another thread at the
     * same moment must not inherit these, or our EOF would wait for it. */
    if (devnull < 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        pipe2(ex, O_CLOEXEC) != 0) {
        snprintf(why, why_size, "cannot make pipes for the trial: %s", strerror(errno));
        if (devnull >= 0)
            close(devnull);
        close_pair(out);
        close_pair(err);
        close_pair(ex);
        return -1;
    }
    long open_max = sysconf(_SC_OPEN_MAX); /* not async-signal-safe: asked before fork */
    int max_fd = (open_max > 0 && open_max < 65536) ? (int)open_max - 1 : 65535;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, why_size, "cannot fork: %s", strerror(errno));
        close(devnull);
        close_pair(out);
        close_pair(err);
        close_pair(ex);
        return -1;
    }
    if (pid == 0)
        child(spec, devnull, out[1], err[1], ex[1], max_fd, parent);
    /* Also here, so that the group exists before anyone signals it. EACCES
     * (the child already exec'd) and ESRCH are fine: the child did it. */
    setpgid(pid, pid);
    close(devnull);
    close(out[1]);
    close(err[1]);
    close(ex[1]);
    ExecFailure f;
    ssize_t n;
    do {
        n = read(ex[0], &f, sizeof f);
    } while (n < 0 && errno == EINTR);
    close(ex[0]);
    if (n == (ssize_t)sizeof f) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        close(out[0]);
        close(err[0]);
        const char *what = f.stage == STAGE_CHDIR ? "cannot enter the folder" : "cannot run";
        const char *arg = f.stage == STAGE_CHDIR ? spec->cwd : spec->argv[0];
        if (f.stage == STAGE_SETUP)
            snprintf(why, why_size, "cannot set up the trial's process: %s", strerror(f.err));
        else
            snprintf(why, why_size, "%s '%s': %s", what, arg, strerror(f.err));
        return -1;
    }
    r->pid = pid;
    r->out_fd = out[0];
    r->err_fd = err[0];
    fcntl(r->out_fd, F_SETFL, fcntl(r->out_fd, F_GETFL) | O_NONBLOCK);
    fcntl(r->err_fd, F_SETFL, fcntl(r->err_fd, F_GETFL) | O_NONBLOCK);
#ifdef SYS_pidfd_open
    r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (r->pidfd >= 0)
        fcntl(r->pidfd, F_SETFD, FD_CLOEXEC);
#endif
    return 0;
}

bool runner_exited(const Runner *r)
{
    if (r->pid <= 0 || r->reaped)
        return true;
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)r->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0)
        return errno == ECHILD;
    return info.si_pid == r->pid;
}

void runner_reap(Runner *r)
{
    if (r->pid <= 0 || r->reaped)
        return;
    int st = 0;
    pid_t p;
    do {
        p = waitpid(r->pid, &st, 0);
    } while (p < 0 && errno == EINTR);
    r->status = p == r->pid ? st : (127 << 8);
    r->reaped = true;
}

int runner_signal(const Runner *r, int sig)
{
    if (r->pid <= 0) {
        errno = ESRCH;
        return -1;
    }
    return kill(-r->pid, sig);
}

bool runner_group_alive(const Runner *r)
{
    return r->pid > 0 && (kill(-r->pid, 0) == 0 || errno == EPERM);
}

void runner_close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void runner_close(Runner *r)
{
    runner_close_fd(&r->out_fd);
    runner_close_fd(&r->err_fd);
    runner_close_fd(&r->pidfd);
}

void runner_describe(int status, char *buf, size_t size)
{
    if (WIFEXITED(status))
        snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, size, "ended with wait status %d", status);
}
