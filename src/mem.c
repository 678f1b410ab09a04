/* Memory estimate of a shape row: sum over slots of numel * dtype size. */
#include "mem.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const struct { const char *name; int bytes; } DTYPES[] = {
  {"DT_FLOAT", 4},        {"DT_FLOAT16", 2},     {"DT_BF16", 2},        {"DT_BFLOAT16", 2},
  {"DT_FLOAT32", 4},      {"DT_FLOAT64", 8},     {"DT_DOUBLE", 8},      {"DT_INT8", 1},
  {"DT_INT16", 2},        {"DT_INT32", 4},       {"DT_INT64", 8},       {"DT_UINT8", 1},
  {"DT_UINT16", 2},       {"DT_UINT32", 4},      {"DT_UINT64", 8},      {"DT_BOOL", 1},
  {"DT_COMPLEX64", 8},    {"DT_COMPLEX128", 16}, {"DT_FLOAT8_E4M3", 1}, {"DT_FLOAT8_E5M2", 1},
  {"DT_FLOAT8", 1},       {"FLOAT", 4},          {"INT8", 1},           {"INT16", 2},
  {"INT32", 4},           {"INT64", 8},          {"UINT8", 1},          {"BOOL", 1},
};

int ps_mem_dtype_bytes(const char *name, size_t len) {
  while (len && isspace((unsigned char)*name)) name++, len--;
  while (len && isspace((unsigned char)name[len - 1])) len--;
  char up[32];
  if (len == 0 || len >= sizeof up) return 2;
  for (size_t i = 0; i < len; i++) up[i] = (char)toupper((unsigned char)name[i]);
  up[len] = '\0';
  for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
    if (strcmp(up, DTYPES[i].name) == 0) return DTYPES[i].bytes;
  return 2;
}

uint64_t ps_mem_tensor_bytes(const int64_t *dims, size_t n, int elem_bytes) {
  if (n == 0 || elem_bytes <= 0) return 0;
  uint64_t total = (uint64_t)elem_bytes;
  int saturated = 0;
  for (size_t i = 0; i < n; i++) {
    if (dims[i] <= 0) return 0;
    uint64_t d = (uint64_t)dims[i];
    if (!saturated && total > UINT64_MAX / d) saturated = 1;
    else if (!saturated) total *= d;
  }
  return saturated ? UINT64_MAX : total;
}

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
