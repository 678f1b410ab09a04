/* Child processes; see proc.h. */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int ps_proc_which(const char *name, char *out, size_t cap) {
  if (!name || !*name) return -1;
  if (strchr(name, '/')) {
    if (access(name, X_OK) != 0) return -1;
    snprintf(out, cap, "%s", name);
    return 0;
  }
  const char *path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    const char *end = strchr(path, ':');
    size_t n = end ? (size_t)(end - path) : strlen(path);
    char cand[4096];
    if (snprintf(cand, sizeof cand, "%.*s/%s", (int)(n ? n : 1), n ? path : ".", name) <
        (int)sizeof cand) {
      struct stat st;
      if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0) {
        snprintf(out, cap, "%s", cand);
        return 0;
      }
    }
    path += n + (end ? 1 : 0);
  }
  return -1;
}

/* In the child: report errno plus a stage code through the pipe, then exit. */
static void child_fail(int fd, int stage) {
  int msg[2] = {stage, errno};
  ssize_t w = write(fd, msg, sizeof msg);
  (void)w;
  _exit(127);
}

enum { ST_CWD = 1, ST_STDOUT, ST_STDERR, ST_EXEC, ST_STDIN };

static int open_out(const char *path) {
  return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
}

int ps_proc_spawn(ps_proc *p, const ps_proc_opts *o, char *err, size_t errsize) {
  memset(p, 0, sizeof *p);
  p->pid = -1;
  if (!o->argv || !o->argv[0]) {
    snprintf(err, errsize, "empty command");
    return -1;
  }
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) {
    snprintf(err, errsize, "pipe: %s", strerror(errno));
    return -1;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, errsize, "fork: %s", strerror(errno));
    close(pfd[0]);
    close(pfd[1]);
    return -1;
  }
  if (pid == 0) {
    close(pfd[0]);
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    if (o->cwd && chdir(o->cwd) != 0) child_fail(pfd[1], ST_CWD);
    if (o->stdin_null) {
      int fd = open("/dev/null", O_RDONLY);
      if (fd < 0 || dup2(fd, 0) < 0) child_fail(pfd[1], ST_STDIN);
    }
    int ofd = -1;
    if (o->stdout_path) {
      ofd = open_out(o->stdout_path);
      if (ofd < 0 || dup2(ofd, 1) < 0) child_fail(pfd[1], ST_STDOUT);
    }
    if (o->stderr_path) {
      if (o->stdout_path && strcmp(o->stdout_path, o->stderr_path) == 0) {
        if (dup2(1, 2) < 0) child_fail(pfd[1], ST_STDERR);
      } else {
        int efd = open_out(o->stderr_path);
        if (efd < 0 || dup2(efd, 2) < 0) child_fail(pfd[1], ST_STDERR);
      }
    }
    for (const char *const *e = o->env; e && *e; e++) {
      const char *eq = strchr(*e, '=');
      if (eq) {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
        setenv(name, eq + 1, 1);
      } else {
        unsetenv(*e);
      }
    }
    execvp(o->argv[0], (char *const *)o->argv);
    child_fail(pfd[1], ST_EXEC);
  }
  setpgid(pid, pid); /* also in the parent: no window where a kill misses the group */
  close(pfd[1]);
  int msg[2];
  ssize_t n;
  do n = read(pfd[0], msg, sizeof msg); while (n < 0 && errno == EINTR);
  close(pfd[0]);
  if (n == (ssize_t)sizeof msg) {
    int status;
    waitpid(pid, &status, 0);
    const char *what = msg[0] == ST_CWD ? "working directory" : msg[0] == ST_STDOUT ? "stdout file"
                     : msg[0] == ST_STDERR ? "stderr file" : msg[0] == ST_STDIN ? "stdin" : NULL;
    if (msg[0] == ST_EXEC && msg[1] == ENOENT)
      snprintf(err, errsize, "%s: not found", o->argv[0]);
    else if (what)
      snprintf(err, errsize, "%s: %s %s: %s", o->argv[0], what,
               msg[0] == ST_CWD ? (o->cwd ? o->cwd : "") :
               msg[0] == ST_STDOUT ? o->stdout_path : msg[0] == ST_STDERR ? o->stderr_path : "",
               strerror(msg[1]));
    else
      snprintf(err, errsize, "%s: cannot run: %s", o->argv[0], strerror(msg[1]));
    return -1;
  }
  p->pid = pid;
  return 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int ps_proc_wait(ps_proc *p, double timeout) {
  if (p->done) return 1;
  if (p->pid <= 0) {
    errno = ECHILD;
    return -1;
  }
  double deadline = now() + timeout;
  long nap = 1000000; /* 1 ms, growing to 50 ms */
  for (;;) {
    int status;
    pid_t r = waitpid(p->pid, &status, timeout < 0 ? 0 : WNOHANG);
    if (r == p->pid) {
      p->done = 1;
      p->status = status;
      return 1;
    }
    if (r < 0 && errno != EINTR) return -1;
    if (timeout >= 0) {
      if (now() >= deadline) return 0;
      struct timespec ts = {0, nap};
      nanosleep(&ts, NULL);
      if (nap < 50000000) nap *= 2;
    }
  }
}

void ps_proc_kill(ps_proc *p, double grace) {
  if (p->pid <= 0) return;
  /* The group may outlive its leader (grandchildren): signal it even when done. */
  kill(-p->pid, SIGTERM);
  if (!p->done && ps_proc_wait(p, grace) == 1) {
    kill(-p->pid, SIGKILL);
    return;
  }
  kill(-p->pid, SIGKILL);
  if (!p->done) ps_proc_wait(p, -1);
}

int ps_proc_exit_code(const ps_proc *p) {
  if (!p->done) return -1;
  if (WIFEXITED(p->status)) return WEXITSTATUS(p->status);
  if (WIFSIGNALED(p->status)) return 128 + WTERMSIG(p->status);
  return -1;
}

int ps_proc_term_signal(const ps_proc *p) {
  return p->done && WIFSIGNALED(p->status) ? WTERMSIG(p->status) : 0;
}
