/* op_summary aggregation; see opsum.h. */
#include "opsum.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csvread.h"
#include "grow.h"
#include "num.h"
#include "writeback_sig.h"
#include "u64map.h"

typedef struct gkey { char *key; size_t len; } gkey;

struct ps_opsum {
  ps_opsum_group *groups;
  size_t ngroups, cap;
  gkey *keys;              /* per group: its full key, op '\x1e' signature text */
  size_t keys_cap;
  ps_u64map map;           /* XXH3 of the full key -> group index */
  uint64_t rows;
  ps_sig *sig;
  char *kbuf;
  size_t kcap;
};

ps_opsum *ps_opsum_new(void) {
  ps_opsum *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->sig = ps_sig_new();
  ps_u64map_init(&a->map, 1024);
  if (!a->sig) {
    ps_opsum_free(a);
    return NULL;
  }
  return a;
}

void ps_opsum_free(ps_opsum *a) {
  if (!a) return;
  for (size_t i = 0; i < a->ngroups; i++) free(a->groups[i].op); /* with its cells and key */
  free(a->groups);
  free(a->keys);
  ps_u64map_free(&a->map);
  free(a->kbuf);
  ps_sig_free(a->sig);
  free(a);
}

uint64_t ps_opsum_rows(const ps_opsum *a) { return a->rows; }
size_t ps_opsum_ngroups(const ps_opsum *a) { return a->ngroups; }
const ps_opsum_group *ps_opsum_group_at(const ps_opsum *a, size_t i) {
  return i < a->ngroups ? &a->groups[i] : NULL;
}

int ps_opsum_add_file(ps_opsum *a, const char *path, char *err, size_t errsize) {
  ps_csv_reader *r = ps_csv_open(path, PS_CSV_TRIM, err, errsize);
  if (!r) return -1;
  ps_csv_record rec;
  int st = ps_csv_next(r, &rec);
  if (st <= 0) {
    snprintf(err, errsize, "%s", st < 0 ? ps_csv_error(r) : "empty op_summary file");
    ps_csv_close(r);
    return -1;
  }
  int c_type = ps_csv_find_column(rec.fields, rec.nfields, "OP Type");
  int c_task = ps_csv_find_column(rec.fields, rec.nfields, "Task Type");
  int c_dur = ps_csv_find_column(rec.fields, rec.nfields, "Task Duration(us)");
  if (c_type < 0 || c_dur < 0) {
    snprintf(err, errsize, "%s:1: not an op_summary file (no OP Type / Task Duration(us) column)", path);
    ps_csv_close(r);
    return -1;
  }
  int c_base[PS_NBASE], c_met[PS_NCOUNTERS];
  for (int i = 0; i < PS_NBASE; i++) c_base[i] = ps_csv_find_column(rec.fields, rec.nfields, ps_base_columns[i]);
  /* Accelerator Core is an alias of Task Type: the template's core comes from Task Type. */
  c_base[1] = -1;
  /* the file's counter columns (met[k]: counter of cell k) and the duration, parsed per row
   * in one ps_num_finite_n call (cell nm: the duration) */
  int met[PS_NCOUNTERS + 1], nm = 0;
  for (int i = 0; i < PS_NCOUNTERS; i++)
    if ((c_met[i] = ps_csv_find_column(rec.fields, rec.nfields, ps_counter_columns[i])) >= 0) met[nm++] = i;
  _Static_assert(PS_NCOUNTERS + 1 <= 32, "ps_num_finite_n takes 32 cells at most");
  const char *cs[PS_NCOUNTERS + 1];
  size_t cl[PS_NCOUNTERS + 1];
  double cv[PS_NCOUNTERS + 1];
#define F(c) ((c) >= 0 && (size_t)(c) < rec.nfields ? rec.fields[c] : "")
#define L(c) ((c) >= 0 && (size_t)(c) < rec.nfields ? rec.lens[c] : 0)
  while ((st = ps_csv_next(r, &rec)) > 0) {
    a->rows++;
    const char *op = F(c_type);
    if (!*op) continue;
    const size_t sl[5] = {L(c_base[2]), L(c_base[3]), L(c_base[4]), L(c_base[5]), L(c_base[6])};
    ps_sig_row sr = {.op_name = op, .op_state = F(c_base[0]), .in_shapes = F(c_base[2]),
                     .in_dtypes = F(c_base[3]), .in_formats = F(c_base[4]),
                     .out_shapes = F(c_base[5]), .out_dtypes = F(c_base[6]), .lens = sl};
    if (ps_sig_compute(a->sig, &sr) != 0) goto oom;
    size_t slen, oplen = strlen(op);
    const char *text = ps_sig_text(a->sig, &slen);
    size_t klen = oplen + 1 + slen;
    if (ps_grow((void **)&a->kbuf, &a->kcap, klen + 1, 1) != 0) goto oom;
    memcpy(a->kbuf, op, oplen);
    a->kbuf[oplen] = '\x1e';
    memcpy(a->kbuf + oplen + 1, text, slen);
    uint64_t h = ps_sig_hash_bytes(a->kbuf, klen);
    size_t cur = 0, gi;
    while ((gi = ps_u64map_next(&a->map, h, &cur)) != PS_U64MAP_NONE &&
           !(a->keys[gi].len == klen && memcmp(a->keys[gi].key, a->kbuf, klen) == 0))
      ;
    ps_opsum_group *g;
    if (gi != PS_U64MAP_NONE) {
      g = &a->groups[gi];
    } else {
      if (ps_grow((void **)&a->groups, &a->cap, a->ngroups + 1, sizeof *a->groups) != 0 ||
          ps_grow((void **)&a->keys, &a->keys_cap, a->ngroups + 1, sizeof *a->keys) != 0)
        goto oom;
      g = &a->groups[a->ngroups];
      memset(g, 0, sizeof *g);
      /* its op, cells (trimmed by the reader, PS_CSV_TRIM) and key in one block, g->op */
      const char *src[1 + PS_OPSUM_NCELLS];
      size_t len[1 + PS_OPSUM_NCELLS], total = klen;
      src[0] = op;
      for (int c = 0; c < PS_NBASE; c++) src[1 + c] = F(c_base[c]);
      src[1 + PS_OPSUM_TASK_TYPE] = F(c_task);
      for (int i = 0; i <= PS_OPSUM_NCELLS; i++) total += (len[i] = strlen(src[i])) + 1;
      char *blk = malloc(total);
      /* the group goes into the map last, so that the map never holds a half-made group */
      if (!blk || ps_u64map_add(&a->map, h, a->ngroups) != 0) { free(blk); goto oom; }
      char *p = blk;
      for (int i = 0; i <= PS_OPSUM_NCELLS; i++, p += len[i - 1] + 1) {
        memcpy(p, src[i], len[i] + 1);
        if (i) g->cells[i - 1] = p;
      }
      g->op = blk;
      memcpy(p, a->kbuf, klen);
      a->keys[a->ngroups] = (gkey){p, klen};
      g->hash = ps_sig_hash(a->sig);
      a->ngroups++;
    }
    g->count++;
    for (int k = 0; k < nm; k++) cs[k] = F(c_met[met[k]]), cl[k] = L(c_met[met[k]]);
    cs[nm] = F(c_dur), cl[nm] = L(c_dur);
    /* padded: the reader's fields are the CSV engine's (csvscan.h); an absent one is "", never
     * read (an empty cell is no number) */
    uint32_t ok = ps_num_finite_n(cs, cl, nm + 1, 1, cv); /* bit k: cell k is a finite number */
    double d = ok >> nm & 1 ? cv[nm] : NAN;
    if (d > 0) {
      if (!g->nvalid || d < g->min) g->min = d;
      g->nvalid++;
    }
    for (int k = 0; k < nm; k++)
      if (ok >> k & 1) g->sums[met[k]] += cv[k], g->counts[met[k]]++;
  }
#undef F
#undef L
  if (st < 0) {
    snprintf(err, errsize, "%s", ps_csv_error(r));
    ps_csv_close(r);
    return -1;
  }
  ps_csv_close(r);
  return 0;
oom:
  snprintf(err, errsize, "%s: out of memory", path);
  ps_csv_close(r);
  return -1;
}
