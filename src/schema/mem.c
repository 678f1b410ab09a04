/* Memory estimate of a shape row: sum over slots of numel * dtype size. */
#include "mem.h"

#include <stdio.h>


uint64_t ps_mem_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void ps_mem_format(uint64_t n, char *buf, size_t size) {
  const double KiB = 1024.0, MiB = KiB * 1024.0, GiB = MiB * 1024.0;
  double v = (double)n;
  if (v >= GiB) snprintf(buf, size, "%.2f GiB", v / GiB);
  else if (v >= MiB) snprintf(buf, size, "%.2f MiB", v / MiB);
  else if (v >= KiB) snprintf(buf, size, "%.2f KiB", v / KiB);
  else snprintf(buf, size, "%llu B", (unsigned long long)n);
}
