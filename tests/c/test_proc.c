/* Child processes: argv spawn, environment, cwd, output files, exit codes, timeouts and the
 * kill of a whole process group (src/io/proc.h). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc.h"

static char tmp[512];

static char *slurp(const char *path) {
  static char buf[4096];
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void test_exit_env_cwd_output(void **state) {
  (void)state;
  char out[600];
  snprintf(out, sizeof out, "%s/out.txt", tmp);
  const char *argv[] = {"sh", "-c", "echo \"$PS_X:$(pwd)\"; echo err >&2; exit 3", NULL};
  const char *env[] = {"PS_X=hello", "HOME", NULL};
  ps_proc_opts o = {.argv = argv, .env = env, .cwd = "/", .stdout_path = out,
                    .stderr_path = out, .stdin_null = 1};
  ps_proc p;
  char err[256];
  assert_int_equal(ps_proc_spawn(&p, &o, err, sizeof err), 0);
  assert_int_equal(ps_proc_wait(&p, -1), 1);
  assert_int_equal(ps_proc_exit_code(&p), 3);
  assert_string_equal(slurp(out), "hello:/\nerr\n");
}

static void test_not_found(void **state) {
  (void)state;
  const char *argv[] = {"perfscript-no-such-program", NULL};
  ps_proc_opts o = {.argv = argv};
  ps_proc p;
  char err[256];
  assert_int_equal(ps_proc_spawn(&p, &o, err, sizeof err), -1);
  assert_string_equal(err, "perfscript-no-such-program: not found");
  const char *argv2[] = {"true", NULL};
  ps_proc_opts o2 = {.argv = argv2, .cwd = "/no/such/dir"};
  assert_int_equal(ps_proc_spawn(&p, &o2, err, sizeof err), -1);
  assert_non_null(strstr(err, "working directory /no/such/dir"));
  char path[64];
  assert_int_equal(ps_proc_which("sh", path, sizeof path), 0);
  assert_int_equal(ps_proc_which("perfscript-no-such-program", path, sizeof path), -1);
}

/* Running or sleeping; a zombie waiting for a reaper counts as ended. */
static int alive(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  char *st = slurp(path);
  if (!st) return 0;
  char *rp = strrchr(st, ')');
  return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

static void test_timeout_kills_group(void **state) {
  (void)state;
  char pidfile[600];
  snprintf(pidfile, sizeof pidfile, "%s/grandchild.pid", tmp);
  /* The grandchild would outlive a kill of the leader alone. */
  char script[800];
  snprintf(script, sizeof script, "sleep 60 & echo $! > %s; wait", pidfile);
  const char *argv[] = {"sh", "-c", script, NULL};
  ps_proc_opts o = {.argv = argv};
  ps_proc p;
  char err[256];
  assert_int_equal(ps_proc_spawn(&p, &o, err, sizeof err), 0);
  assert_int_equal(ps_proc_wait(&p, 0.3), 0);
  char *text = slurp(pidfile);
  assert_non_null(text);
  pid_t gc = (pid_t)atoi(text);
  assert_true(gc > 0);
  ps_proc_kill(&p, 1.0);
  assert_true(p.done);
  assert_int_equal(ps_proc_term_signal(&p), SIGTERM);
  assert_int_equal(ps_proc_exit_code(&p), 128 + SIGTERM);
  /* The grandchild got the signal too (give the kernel a moment to deliver it). */
  for (int i = 0; i < 100 && alive(gc); i++) usleep(10000);
  assert_false(alive(gc));
}

int main(void) {
  const char *base = getenv("PERFSCRIPT_TEST_TMP");
  snprintf(tmp, sizeof tmp, "%s/proc-%d", base ? base : "/tmp", (int)getpid());
  char cmd[600];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", tmp);
  if (system(cmd) != 0) return 1;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_exit_env_cwd_output),
    cmocka_unit_test(test_not_found),
    cmocka_unit_test(test_timeout_kills_group),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
