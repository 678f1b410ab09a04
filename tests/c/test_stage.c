/* Staged writes (src/io/stage.c): several files replaced together or not at all, read-only
 * targets refused, and a real write failure (RLIMIT_FSIZE: EFBIG) with its cause. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "atomicfile.h"
#include "stage.h"
#include "testutil.h"

static const char *path_of(const char *name) {
  static char p[4][8300];
  static int slot;
  char *s = p[slot++ % 4];
  snprintf(s, 8300, "%s/%s", test_dir(), name);
  return s;
}

static void assert_content(const char *name, const char *want) {
  char *got = read_file(path_of(name), NULL);
  if (want == NULL) {
    assert_null(got);
    return;
  }
  assert_non_null(got);
  assert_string_equal(got, want);
  free(got);
}

/* Stages text for name; returns what ps_stage_add said. */
static int stage_text(ps_stage *s, const char *name, const char *text, char *err, size_t es) {
  ps_atomic a;
  assert_int_equal(ps_atomic_open(&a, path_of(name), err, es), 0);
  fputs(text, a.fp);
  a.stage = s;
  return ps_atomic_commit(&a, 1, err, es);
}

static void reset(void) {
  const char *names[] = {"a.csv", "b.csv", "c.csv"};
  for (int i = 0; i < 3; i++) {
    chmod(path_of(names[i]), 0644);
    unlink(path_of(names[i]));
  }
  write_file("a.csv", "old a\n", 6);
  write_file("b.csv", "old b\n", 6);
  ps_stage_inject_failure(0, 0);
}

static void nothing_changes_before_the_commit(void **state) {
  (void)state;
  reset();
  char err[600];
  ps_stage s;
  ps_stage_init(&s);
  assert_int_equal(stage_text(&s, "a.csv", "new a\n", err, sizeof err), PS_ATOMIC_REPLACED);
  assert_int_equal(stage_text(&s, "b.csv", "old b\n", err, sizeof err), PS_ATOMIC_UNCHANGED);
  assert_int_equal(stage_text(&s, "c.csv", "new c\n", err, sizeof err), PS_ATOMIC_CREATED);
  assert_int_equal(s.n, 2); /* the unchanged file is not renamed */
  assert_content("a.csv", "old a\n");
  assert_content("c.csv", NULL);
  assert_int_equal(temp_files(), 2);
  assert_int_equal(ps_stage_commit(&s, err, sizeof err), 0);
  assert_int_equal(s.done, 2);
  assert_string_equal(s.e[0].path, path_of("a.csv"));
  assert_content("a.csv", "new a\n");
  assert_content("b.csv", "old b\n");
  assert_content("c.csv", "new c\n");
  assert_int_equal(temp_files(), 0);
  ps_stage_free(&s);
}

static void a_failed_write_leaves_every_file_old(void **state) {
  (void)state;
  reset();
  char err[600];
  ps_stage s;
  ps_stage_init(&s);
  ps_stage_inject_failure(2, 0);
  assert_int_equal(stage_text(&s, "a.csv", "new a\n", err, sizeof err), PS_ATOMIC_REPLACED);
  assert_int_equal(stage_text(&s, "b.csv", "new b\n", err, sizeof err), -1);
  assert_non_null(strstr(err, "b.csv: write failed: No space left on device"));
  ps_stage_free(&s); /* the run gives up */
  assert_content("a.csv", "old a\n");
  assert_content("b.csv", "old b\n");
  assert_int_equal(temp_files(), 0);
}

static void an_interrupted_commit_says_which_files_are_new(void **state) {
  (void)state;
  reset();
  char err[600];
  ps_stage s;
  ps_stage_init(&s);
  ps_stage_inject_failure(0, 2);
  stage_text(&s, "a.csv", "new a\n", err, sizeof err);
  stage_text(&s, "b.csv", "new b\n", err, sizeof err);
  stage_text(&s, "c.csv", "new c\n", err, sizeof err);
  assert_int_equal(ps_stage_commit(&s, err, sizeof err), -1);
  assert_non_null(strstr(err, "b.csv: cannot replace: Input/output error"));
  assert_int_equal(s.done, 1);
  assert_content("a.csv", "new a\n");
  assert_content("b.csv", "old b\n");
  assert_content("c.csv", NULL);
  assert_int_equal(temp_files(), 0);
  ps_stage_free(&s);
}

/* Stages a.csv and c.csv, waits wait_us (0: none), removes c.csv's temporary file and commits:
 * the commit fails naming it, with every target old. */
static void commit_with_c_gone(useconds_t wait_us) {
  reset();
  char err[600];
  ps_stage s;
  ps_stage_init(&s);
  stage_text(&s, "a.csv", "new a\n", err, sizeof err);
  stage_text(&s, "c.csv", "new c\n", err, sizeof err);
  assert_int_equal(s.n, 2);
  if (wait_us) usleep(wait_us);
  assert_int_equal(unlink(s.e[1].file.tmp), 0);
  assert_int_equal(ps_stage_commit(&s, err, sizeof err), -1);
  assert_non_null(strstr(err, "c.csv: write failed: No such file or directory (the original is untouched)"));
  assert_int_equal(s.done, 0);
  assert_content("a.csv", "old a\n");
  assert_content("c.csv", NULL);
  assert_int_equal(temp_files(), 0);
  ps_stage_free(&s);
}

/* The staged files are fsynced together at the commit, before any rename: one that cannot
 * be (its temporary file gone) fails the commit with every target old. */
static void a_file_not_synced_leaves_every_file_old(void **state) {
  (void)state;
  commit_with_c_gone(0);
}

/* The same when the file was fsynced on the stage's syncer thread before it went: the commit
 * still finds it gone before it renames anything. */
static void a_file_gone_after_its_sync_leaves_every_file_old(void **state) {
  (void)state;
  commit_with_c_gone(300000);   /* the syncer has fsynced both */
}

/* Many files in two directories (synced on several threads, each directory once) all land. */
static void many_files_in_two_directories(void **state) {
  (void)state;
  reset();
  char err[600], name[64], text[64];
  mkdir(path_of("sub"), 0755);
  ps_stage s;
  ps_stage_init(&s);
  for (int i = 0; i < 30; i++) {
    snprintf(name, sizeof name, "%sm%d.csv", i % 3 ? "" : "sub/", i);
    snprintf(text, sizeof text, "file %d\n", i);
    assert_int_equal(stage_text(&s, name, text, err, sizeof err), PS_ATOMIC_CREATED);
  }
  assert_int_equal(ps_stage_commit(&s, err, sizeof err), 0);
  assert_int_equal(s.done, 30);
  for (int i = 0; i < 30; i++) {
    snprintf(name, sizeof name, "%sm%d.csv", i % 3 ? "" : "sub/", i);
    snprintf(text, sizeof text, "file %d\n", i);
    assert_content(name, text);
    unlink(path_of(name));
  }
  assert_int_equal(temp_files(), 0);
  rmdir(path_of("sub"));
  ps_stage_free(&s);
}

static void a_read_only_file_is_refused(void **state) {
  (void)state;
  reset();
  char err[600];
  chmod(path_of("b.csv"), 0444);
  /* a single atomic write */
  assert_int_equal(ps_atomic_write(path_of("b.csv"), "x\n", 2, 1, err, sizeof err), -1);
  assert_non_null(strstr(err, "b.csv: the file is marked read-only (mode 0444)"));
  /* in a stage: refused before anything is renamed */
  ps_stage s;
  ps_stage_init(&s);
  assert_int_equal(stage_text(&s, "a.csv", "new a\n", err, sizeof err), PS_ATOMIC_REPLACED);
  assert_int_equal(stage_text(&s, "b.csv", "new b\n", err, sizeof err), -1);
  ps_stage_free(&s);
  assert_content("a.csv", "old a\n");
  assert_content("b.csv", "old b\n");
  /* unchanged content is no write: not refused */
  assert_int_equal(ps_atomic_write(path_of("b.csv"), "old b\n", 6, 1, err, sizeof err),
                   PS_ATOMIC_UNCHANGED);
  assert_int_equal(temp_files(), 0);
  chmod(path_of("b.csv"), 0644);
}

/* A real failing write: a file size limit (as with `ulimit -f`), SIGXFSZ ignored as perfscript
 * does, so write() fails with EFBIG; staged in a child process. */
static void a_file_size_limit_fails_with_its_cause(void **state) {
  (void)state;
  reset();
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {4096, 4096};
    setrlimit(RLIMIT_FSIZE, &rl);
    char err[600], big[8192];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ps_stage s;
    ps_stage_init(&s);
    if (stage_text(&s, "a.csv", "new a\n", err, sizeof err) != PS_ATOMIC_REPLACED) _exit(2);
    if (stage_text(&s, "b.csv", big, err, sizeof err) != -1) _exit(3);
    if (strstr(err, "b.csv: write failed: File too large") == NULL) _exit(4);
    ps_stage_free(&s);
    _exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_content("a.csv", "old a\n");
  assert_content("b.csv", "old b\n");
  assert_int_equal(temp_files(), 0);
}

/* Append mode: stages name as its current bytes followed by text; *last: the old last byte. */
static int stage_append(ps_stage *s, const char *name, const char *text, int *last, char *err,
                        size_t es) {
  ps_atomic a;
  if (ps_atomic_open_append(&a, path_of(name), last, err, es) != 0) return -1;
  fputs(text, a.fp);
  a.stage = s;
  return ps_atomic_commit(&a, 0, err, es);
}

/* A database-sized file (several copy_file_range chunks and read buffers), no final newline. */
static char *big_text(size_t *len) {
  size_t n = 3 * 1024 * 1024 + 17;
  char *t = malloc(n + 1);
  assert_non_null(t);
  for (size_t i = 0; i < n; i++) t[i] = (i % 97 == 96) ? '\n' : (char)('a' + i % 26);
  t[n - 1] = 'z';
  t[n] = '\0';
  *len = n;
  return t;
}

static void an_append_equals_a_rewrite(void **state) {
  (void)state;
  reset();
  size_t n;
  char *old = big_text(&n);
  write_file("c.csv", old, n);
  char err[600];
  ps_stage s;
  ps_stage_init(&s);
  int last = 0;
  assert_int_equal(stage_append(&s, "a.csv", "new row\n", &last, err, sizeof err), PS_ATOMIC_REPLACED);
  assert_int_equal(last, '\n');
  assert_int_equal(stage_append(&s, "c.csv", "\nnew row\n", &last, err, sizeof err), PS_ATOMIC_REPLACED);
  assert_int_equal(last, 'z');
  /* a file that does not exist yet is created with the appended text only */
  assert_int_equal(stage_append(&s, "d.csv", "only\n", &last, err, sizeof err), PS_ATOMIC_CREATED);
  assert_int_equal(last, -1);
  /* nothing is visible before the commit */
  assert_content("a.csv", "old a\n");
  size_t got_len;
  char *got = read_file(path_of("c.csv"), &got_len);
  assert_int_equal(got_len, n);
  assert_memory_equal(got, old, n);
  free(got);
  assert_content("d.csv", NULL);
  assert_int_equal(temp_files(), 3);
  assert_int_equal(ps_stage_commit(&s, err, sizeof err), 0);
  ps_stage_free(&s);
  assert_content("a.csv", "old a\nnew row\n");
  assert_content("d.csv", "only\n");
  got = read_file(path_of("c.csv"), &got_len);
  assert_int_equal(got_len, n + 9);
  assert_memory_equal(got, old, n);
  assert_memory_equal(got + n, "\nnew row\n", 9);
  free(got);
  assert_int_equal(temp_files(), 0);
  free(old);
  unlink(path_of("c.csv"));
  unlink(path_of("d.csv"));
}

static void a_failed_append_leaves_every_file_old(void **state) {
  (void)state;
  reset();
  char err[600];
  int last;
  ps_stage s;
  ps_stage_init(&s);
  ps_stage_inject_failure(2, 0);
  assert_int_equal(stage_append(&s, "a.csv", "new a\n", &last, err, sizeof err), PS_ATOMIC_REPLACED);
  assert_int_equal(stage_append(&s, "b.csv", "new b\n", &last, err, sizeof err), -1);
  assert_non_null(strstr(err, "b.csv: write failed: No space left on device"));
  ps_stage_free(&s);
  assert_content("a.csv", "old a\n");
  assert_content("b.csv", "old b\n");
  assert_int_equal(temp_files(), 0);
  /* a rename failing in the commit: the files before it new, the rest old */
  ps_stage_init(&s);
  ps_stage_inject_failure(0, 2);
  stage_append(&s, "a.csv", "new a\n", &last, err, sizeof err);
  stage_append(&s, "b.csv", "new b\n", &last, err, sizeof err);
  assert_int_equal(ps_stage_commit(&s, err, sizeof err), -1);
  assert_int_equal(s.done, 1);
  ps_stage_free(&s);
  assert_content("a.csv", "old a\nnew a\n");
  assert_content("b.csv", "old b\n");
  assert_int_equal(temp_files(), 0);
}

static void an_unreadable_file_is_not_appended_to(void **state) {
  (void)state;
  reset();
  char err[600];
  int last;
  ps_atomic a;
  mkdir(path_of("dir.csv"), 0755);
  /* a directory opens read-only but cannot be copied: the cause is said, no temporary left */
  assert_int_equal(ps_atomic_open_append(&a, path_of("dir.csv"), &last, err, sizeof err), -1);
  assert_non_null(strstr(err, "dir.csv"));
  assert_int_equal(temp_files(), 0);
  rmdir(path_of("dir.csv"));
}

/* A worker's stage hands its files to the parent's (ps_stage_detach, ps_stage_adopt): the
 * parent's commit publishes them, its abort removes them; a file not staged for the target is
 * refused, and so is a temporary file that is gone. */
static void staged_files_move_to_another_stage(void **state) {
  (void)state;
  reset();
  char err[600];
  ps_stage w, p;
  ps_stage_init(&w);
  ps_stage_init(&p);
  assert_int_equal(stage_text(&w, "a.csv", "new a\n", err, sizeof err), PS_ATOMIC_REPLACED);
  assert_int_equal(stage_text(&w, "c.csv", "new c\n", err, sizeof err), PS_ATOMIC_CREATED);
  char *tmp[2], *target[2];
  int st[2];
  for (int i = 0; i < 2; i++) {
    tmp[i] = strdup(w.e[i].file.tmp);
    target[i] = strdup(w.e[i].path);
    st[i] = w.e[i].status;
  }
  ps_stage_detach(&w);
  assert_int_equal(w.n, 0);
  ps_stage_free(&w); /* the worker's stage is gone: the temporary files stay */
  assert_int_equal(temp_files(), 2);
  /* not a temporary file of a.csv's, or a status that is no write: refused, nothing adopted */
  assert_int_equal(ps_stage_adopt(&p, target[0], tmp[1], st[0], err, sizeof err), -1);
  assert_non_null(strstr(err, "is not a temporary file of it"));
  assert_int_equal(ps_stage_adopt(&p, target[0], path_of("b.csv"), st[0], err, sizeof err), -1);
  assert_int_equal(ps_stage_adopt(&p, target[0], tmp[0], PS_ATOMIC_UNCHANGED, err, sizeof err), -1);
  assert_int_equal(p.n, 0);
  for (int i = 0; i < 2; i++)
    assert_int_equal(ps_stage_adopt(&p, target[i], tmp[i], st[i], err, sizeof err), 0);
  assert_int_equal(ps_stage_adopt(&p, target[0], tmp[0], st[0], err, sizeof err), -1);
  assert_non_null(strstr(err, "staged twice"));
  assert_content("a.csv", "old a\n");
  assert_int_equal(ps_stage_commit(&p, err, sizeof err), 0);
  assert_content("a.csv", "new a\n");
  assert_content("c.csv", "new c\n");
  assert_int_equal(temp_files(), 0);
  ps_stage_free(&p);
  /* adopted, then aborted: the temporary files go, the targets stay; a vanished file is said */
  ps_stage_init(&w);
  ps_stage_init(&p);
  assert_int_equal(stage_text(&w, "b.csv", "new b\n", err, sizeof err), PS_ATOMIC_REPLACED);
  char *t = strdup(w.e[0].file.tmp), *g = strdup(w.e[0].path);
  ps_stage_detach(&w);
  ps_stage_free(&w);
  assert_int_equal(ps_stage_adopt(&p, g, t, PS_ATOMIC_REPLACED, err, sizeof err), 0);
  ps_stage_free(&p);
  assert_int_equal(temp_files(), 0);
  assert_content("b.csv", "old b\n");
  ps_stage_init(&p);
  assert_int_equal(ps_stage_adopt(&p, g, t, PS_ATOMIC_REPLACED, err, sizeof err), -1);
  assert_non_null(strstr(err, "is gone"));
  ps_stage_free(&p);
  for (int i = 0; i < 2; i++) free(tmp[i]), free(target[i]);
  free(t);
  free(g);
  unlink(path_of("c.csv"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(nothing_changes_before_the_commit),
    cmocka_unit_test(a_failed_write_leaves_every_file_old),
    cmocka_unit_test(an_interrupted_commit_says_which_files_are_new),
    cmocka_unit_test(a_file_not_synced_leaves_every_file_old),
    cmocka_unit_test(a_file_gone_after_its_sync_leaves_every_file_old),
    cmocka_unit_test(many_files_in_two_directories),
    cmocka_unit_test(a_read_only_file_is_refused),
    cmocka_unit_test(a_file_size_limit_fails_with_its_cause),
    cmocka_unit_test(an_append_equals_a_rewrite),
    cmocka_unit_test(a_failed_append_leaves_every_file_old),
    cmocka_unit_test(an_unreadable_file_is_not_appended_to),
    cmocka_unit_test(staged_files_move_to_another_stage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
