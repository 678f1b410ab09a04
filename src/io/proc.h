/* Child processes for the profiler and benchmark launchers: spawn from an argv array (never a
 * shell string), with extra environment, working directory and output files; the child leads
 * its own process group, so a timeout or a failing sibling kills its whole tree (msprof and
 * the Python workers it starts) with one signal. */
#ifndef PS_PROC_H
#define PS_PROC_H

#include <stddef.h>
#include <sys/types.h>

typedef struct ps_proc_opts {
  const char *const *argv;     /* NULL-terminated; argv[0] is looked up in PATH */
  const char *const *env;      /* NULL-terminated "K=V" (set) or "K" (unset) entries, or NULL */
  const char *cwd;             /* NULL: the current directory */
  const char *stdout_path;     /* NULL: inherited; the file is created or truncated */
  const char *stderr_path;     /* NULL: inherited; equal to stdout_path: one shared file */
  int stdin_null;              /* read stdin from /dev/null */
} ps_proc_opts;

typedef struct ps_proc {
  pid_t pid;                   /* also the process group id */
  int done;
  int status;                  /* raw wait status once done */
} ps_proc;

/* Starts the child. Returns 0, or -1 with a message in err: "<argv0>: not found" when the
 * program does not exist, the reason otherwise (cwd missing, output file not writable...). */
int ps_proc_spawn(ps_proc *p, const ps_proc_opts *o, char *err, size_t errsize);

/* Waits up to timeout seconds (< 0: forever). 1: the child ended; 0: still running;
 * -1: error (errno). */
int ps_proc_wait(ps_proc *p, double timeout);

/* SIGTERM to the group, then SIGKILL after grace seconds if the leader is still there;
 * reaps the leader. */
void ps_proc_kill(ps_proc *p, double grace);

/* The exit code, or 128 + signal number when killed by a signal; -1 when not done. */
int ps_proc_exit_code(const ps_proc *p);
/* The signal that ended the child, or 0. */
int ps_proc_term_signal(const ps_proc *p);

/* The full path of an executable found in PATH (or the name itself when it contains '/'
 * and is executable) into out; returns 0, or -1 when not found. */
int ps_proc_which(const char *name, char *out, size_t cap);

#endif
