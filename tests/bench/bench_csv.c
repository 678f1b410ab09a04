/* CSV benchmark helper (not a test): generates a kernel_details-style file and times the C
 * passes over it. Driven by tests/bench/csv_bench.sh, which adds the Lua and Python passes.
 *   bench_csv gen FILE MB      write about MB megabytes of kernel_details rows (47 columns)
 *   bench_csv memchr FILE      read() + memchr newline count: the I/O ceiling
 *   bench_csv parse FILE       perfscript's C reader (csvread.h), every field touched, no Lua
 *   bench_csv scan FILE        the engine under it (csvscan.h, trimming, as the import uses it)
 * Each pass prints "<name> <bytes> <seconds> <records>". */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "csvread.h"
#include "csvscan.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);  /* CPU time: fair on a shared machine */
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *HEADER =
  "Device_id,Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,"
  "Start Time(us),Duration(us),Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,"
  "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,"
  "Context ID,aicore_time(us),aic_total_cycles,aic_mac_time(us),aic_mac_ratio,"
  "aic_scalar_time(us),aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,aic_mte2_time(us),"
  "aic_mte2_ratio,aic_fixpipe_time(us),aic_fixpipe_ratio,aic_icache_miss_rate,aiv_time(us),"
  "aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,"
  "aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte3_time(us),aiv_mte3_ratio,aiv_icache_miss_rate,"
  "cube_utilization(%)\n";

static int generate(const char *path, long mb) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) { perror(path); return 1; }
  fputs(HEADER, f);
  static const char *types[] = {"MatMulV2", "FlashAttentionScore", "Add", "RmsNorm", "Cast",
                                "TransData", "GroupedMatmul", "Mul"};
  unsigned long long ts = 1736412474714258000ULL;
  unsigned seed = 12345;
  long target = mb * 1000 * 1000;
  for (long i = 0; ftell(f) < target; i++) {
    seed = seed * 1103515245u + 12345u;
    const char *type = types[(seed >> 16) % 8];
    unsigned m = 1 + (seed >> 8) % 8192, k = 128 * (1 + (seed >> 4) % 64);
    ts += 1000 + (seed % 50000);
    fprintf(f, "0,%ld,4294967295,%ld,2,aclnn%s_%sAiCore_%s,%s,dynamic,AI_CORE,"
               "%llu.%03llu\t,%u.%03u,%u.%03u,24,0,NO,"
               "\"\"\"%u,%u;%u,%u\"\"\",DT_BF16;DT_BF16,FORMAT_ND;FORMAT_ND,"
               "\"\"\"%u,%u\"\"\",DT_BF16,FORMAT_ND,N/A",
            i / 1000, i % 65536, type, type, type, type, ts / 1000, ts % 1000,
            5 + seed % 900, seed % 1000, seed % 7, seed % 1000, m, k, k, 4096, m, 4096);
    for (int c = 0; c < 25; c++)
      fprintf(f, ",%u.%06u", (seed >> (c % 16)) % 500, (seed * (unsigned)(c + 7)) % 1000000);
    fputc('\n', f);
  }
  fclose(f);
  return 0;
}

static int pass_memchr(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) { perror(path); return 1; }
  static char buf[1 << 20];
  long lines = 0, bytes = 0;
  double t0 = now();
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    bytes += n;
    for (char *p = buf, *end = buf + n; (p = memchr(p, '\n', (size_t)(end - p))); p++) lines++;
  }
  double t = now() - t0;
  close(fd);
  printf("memchr %ld %.4f %ld\n", bytes, t, lines);
  return 0;
}

/* The engine as the import drives it: zero-copy, trimming, every field touched. */
static int pass_scan(const char *path) {
  char err[600];
  double t0 = now();
  ps_scan *s = ps_scan_open(path, err, sizeof err);
  if (s == NULL) { fprintf(stderr, "%s\n", err); return 1; }
  ps_scan_record rec;
  long records = 0;
  size_t sum = 0;
  int st;
  while ((st = ps_scan_next(s, &rec)) == 1) {
    records++;
    for (size_t i = 0; i < rec.nfields; i++) sum += rec.lens[i];
  }
  double t = now() - t0;
  if (st < 0) { fprintf(stderr, "%s\n", ps_scan_error(s)); return 1; }
  printf("scan %llu %.4f %ld\n", (unsigned long long)ps_scan_file_size(s), t, records);
  ps_scan_close(s);
  return sum == 0;
}

static int pass_parse(const char *path) {
  char err[600];
  double t0 = now();
  ps_csv_reader *r = ps_csv_open(path, 0, err, sizeof err);
  if (r == NULL) { fprintf(stderr, "%s\n", err); return 1; }
  ps_csv_record rec;
  long records = 0;
  size_t sum = 0;
  int st;
  while ((st = ps_csv_next(r, &rec)) == 1) {
    records++;
    for (size_t i = 0; i < rec.nfields; i++) sum += rec.lens[i];  /* touch every field */
  }
  double t = now() - t0;
  if (st < 0) { fprintf(stderr, "%s\n", ps_csv_error(r)); return 1; }
  printf("parse %llu %.4f %ld\n", (unsigned long long)ps_csv_file_size(r), t, records);
  ps_csv_close(r);
  return sum == 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "gen") == 0) return generate(argv[2], atol(argv[3]));
  if (argc == 3 && strcmp(argv[1], "memchr") == 0) return pass_memchr(argv[2]);
  if (argc == 3 && strcmp(argv[1], "scan") == 0) return pass_scan(argv[2]);
  if (argc == 3 && strcmp(argv[1], "parse") == 0) return pass_parse(argv[2]);
  fprintf(stderr, "usage: bench_csv gen FILE MB | memchr FILE | parse FILE | scan FILE\n");
  return 2;
}
