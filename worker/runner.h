/* One trial's process: fork/exec in its own process group, with its stdout
 * and stderr on pipes.
 *
 * The child runs in a new process group (setpgid(0, 0)) whose id is its pid,
 * so a stop reaches everything the program started: SIGTERM to the group,
 * SIGKILL later if any of it is still alive. Its stdin is /dev/null, every
 * other descriptor of the worker is closed, the signal mask and the
 * dispositions the worker changed are reset, and exec failures (and a cwd
 * that cannot be entered) come back to runner_start through a close-on-exec
 * pipe, with their errno. If the worker dies (kill -9), the program gets
 * SIGKILL (PR_SET_PDEATHSIG), and the rest of its group SIGPIPE on its next
 * write to the pipes.
 *
 * Waiting needs no SIGCHLD: the supervising thread polls the pipes and, where
 * the kernel has one, a pidfd that turns readable when the process exits;
 * runner_exited checks without reaping (so the group id cannot be reused
 * while someone may still signal it) and runner_reap reaps. */
#ifndef RUNG_WORKER_RUNNER_H
#define RUNG_WORKER_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct RunnerSpec {
    char *const *argv; /* borrowed, NULL-terminated; argv[0] is looked up in PATH */
    char *const *envp; /* borrowed, NULL-terminated: the whole environment */
    const char *cwd;   /* borrowed; NULL = the worker's; relative = to the worker's */
} RunnerSpec;

typedef struct Runner {
    pid_t pid;          /* also the process group id; 0 before a start */
    int out_fd, err_fd; /* read ends of stdout and stderr, non-blocking; -1 once closed */
    int pidfd;          /* readable once the process exited; -1 without kernel support */
    bool reaped;
    int status; /* waitpid status, once reaped */
} Runner;

/* Starts the process. 0, or -1 with why (why_size bytes) saying what failed,
 * e.g. "cannot run 'python4': No such file or directory" (nothing is left
 * running then). */
int runner_start(const RunnerSpec *spec, Runner *r, char *why, size_t why_size);

/* Whether the process exited (not reaped yet; never blocks). */
bool runner_exited(const Runner *r);
/* Reaps the process (blocks until it exits) and keeps its status. */
void runner_reap(Runner *r);

/* Sends sig to the whole group; 0, or -1 with errno (ESRCH: none left). */
int runner_signal(const Runner *r, int sig);
/* Whether anything of the group is alive (zombies of it count). */
bool runner_group_alive(const Runner *r);

/* Closes one of the pipes (when it reached EOF). */
void runner_close_fd(int *fd);
/* Closes whatever is open; does not wait or signal. */
void runner_close(Runner *r);

/* "exit status 1", "killed by signal 9 (Killed)": the status as words. */
void runner_describe(int status, char *buf, size_t size);

#endif
