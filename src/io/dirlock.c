#include "dirlock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomicfile.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int ps_dirlock_acquire(const char *dir, double wait_seconds,
                       void (*on_wait)(const char *holder, void *ud), void *ud,
                       char *err, size_t errsize) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, PS_LOCK_FILE);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    snprintf(err, errsize, "%s: cannot open the lock file: %s", path, strerror(errno));
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) {
      snprintf(err, errsize, "%s: cannot lock: %s", path, strerror(errno));
      close(fd);
      return -1;
    }
    if (wait_seconds == 0) {
      snprintf(err, errsize, "%s: the database is locked by another perfscript run", dir);
      close(fd);
      return -1;
    }
    if (on_wait) {
      char holder[128] = "";
      ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
      holder[n > 0 ? n : 0] = '\0';
      holder[strcspn(holder, "\n")] = '\0';
      on_wait(holder, ud);
    }
    double deadline = now_seconds() + wait_seconds;
    for (;;) {
      if (flock(fd, LOCK_EX | LOCK_NB) == 0) break;
      if (wait_seconds > 0 && now_seconds() >= deadline) {
        snprintf(err, errsize, "%s: still locked by another perfscript run after %.0f s", dir,
                 wait_seconds);
        close(fd);
        return -1;
      }
      struct timespec pause = {0, 50 * 1000 * 1000};
      nanosleep(&pause, NULL);
    }
  }
  char who[64];
  int n = snprintf(who, sizeof who, "pid %ld\n", (long)getpid());
  if (ftruncate(fd, 0) == 0 && pwrite(fd, who, (size_t)n, 0) < 0) { /* advisory text only */ }
  return fd;
}

void ps_dirlock_release(int fd) {
  if (fd < 0) return;
  flock(fd, LOCK_UN);
  close(fd);
}

int ps_dirlock_recover(const char *dir, void (*on_removed)(const char *path, long pid, void *ud),
                       void *ud) {
  DIR *d = opendir(dir);
  if (d == NULL) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    long pid = ps_atomic_tmp_owner(e->d_name);
    if (pid <= 0 || pid == (long)getpid()) continue;
    /* Alive (or not ours to signal): its writer may still be at work; leave it. */
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path) continue;
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (unlink(path) == 0) {
      n++;
      if (on_removed) on_removed(path, pid, ud);
    }
  }
  closedir(d);
  return n;
}
