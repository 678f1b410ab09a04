/* See cores.h. */
#include "cores.h"

#include <stdatomic.h>
#include <unistd.h>

int ps_online_cores(void) {
  static atomic_int cores;   /* 0: not asked yet (two threads asking at once both get it right) */
  int n = atomic_load(&cores);
  if (n == 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (c > 1 << 20 ? 1 << 20 : (int)c) : 1;
    atomic_store(&cores, n);
  }
  return n;
}
