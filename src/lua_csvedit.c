/* perfscript.csvedit: rewrite a CSV file in one streaming pass, for database write-back of
 * files too large to hold as Lua tables.
 *   csvedit.rewrite(src, dst, {
 *     header = {"col", ...},           output header
 *     map = {i1, i2, ...},             source column (1-based) of each output column; 0: empty
 *     edits = {[row] = {[col] = "v"}}, replacements, by data row (1-based) and output column
 *     delete = {[row] = true},         rows left out
 *     append = {{...}, ...},           output rows added at the end
 *     eol = "\n" | "\r\n", bom = bool  (default: keep the source's style)
 *   }) -> "created" | "replaced" | "unchanged", rows written   or nil, message
 * src may be nil (a new file) or equal to dst: the output is written to a temporary file and
 * renamed over dst only on success, so dst stays whole on any failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "csvread.h"
#include "csvwrite.h"
#include "grow.h"
#include "num.h"
#include "luabind.h"
#include "sig.h"
#include "u64map.h"

typedef struct ctx {
  ps_csv_reader *r;
  ps_csv_writer w;
  int wopen;
  const char **f;
  size_t *l;
  char *buf;             /* one formatted row: a single fwrite per row */
  size_t cap;
} ctx;

static int need(ctx *c, size_t n) {
  if (n <= c->cap) return 0;
  size_t cap = c->cap ? c->cap : 4096;
  while (cap < n) cap *= 2;
  char *b = realloc(c->buf, cap);
  if (!b) return -1;
  c->buf = b;
  c->cap = cap;
  return 0;
}

/* Minimal quoting as csvwrite.h (quote a field holding a comma, quote, CR or LF). */
static int put_row(ctx *c, size_t n, char *err, size_t es) {
  size_t o = 0;
  if (n == 1 && c->l[0] == 0) return ps_csv_writer_row(&c->w, c->f, c->l, n, err, es);
  for (size_t j = 0; j < n; j++) {
    const char *s = c->f[j];
    size_t len = c->l[j];
    if (need(c, o + 2 * len + 8) != 0) goto oom;
    if (j) c->buf[o++] = ',';
    int quote = 0;
    for (size_t k = 0; k < len && !quote; k++)
      quote = s[k] == ',' || s[k] == '"' || s[k] == '\r' || s[k] == '\n';
    if (!quote) {
      memcpy(c->buf + o, s, len);
      o += len;
    } else {
      c->buf[o++] = '"';
      for (size_t k = 0; k < len; k++) {
        if (s[k] == '"') c->buf[o++] = '"';
        c->buf[o++] = s[k];
      }
      c->buf[o++] = '"';
    }
  }
  size_t el = strlen(c->w.eol);
  if (need(c, o + el) != 0) goto oom;
  memcpy(c->buf + o, c->w.eol, el);
  o += el;
  if (fwrite(c->buf, 1, o, c->w.file.fp) != o) {
    snprintf(err, es, "%s: write failed", c->w.file.path);
    return -1;
  }
  c->w.rows++;
  return 0;
oom:
  snprintf(err, es, "out of memory");
  return -1;
}

static void ctx_close(ctx *c) {
  if (c->r) ps_csv_close(c->r);
  if (c->wopen) ps_csv_writer_abort(&c->w);
  free(c->f);
  free(c->l);
  free(c->buf);
  c->buf = NULL;
  c->r = NULL;
  c->wopen = 0;
  c->f = NULL;
  c->l = NULL;
}

/* Writes the array at stack index t (strings) as one row of n fields. */
static int write_array(lua_State *L, ctx *c, int t, size_t n, char *err, size_t es) {
  for (size_t j = 0; j < n; j++) {
    lua_rawgeti(L, t, (lua_Integer)j + 1);
    size_t len = 0;
    const char *s = lua_tolstring(L, -1, &len);
    c->f[j] = s ? s : "";
    c->l[j] = s ? len : 0;
    lua_pop(L, 1); /* still referenced by the table */
  }
  return put_row(c, n, err, es);
}

static int l_rewrite(lua_State *L) {
  const char *src = luaL_optstring(L, 1, NULL);
  const char *dst = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_getfield(L, 3, "header");
  int header = lua_gettop(L);
  luaL_checktype(L, header, LUA_TTABLE);
  lua_getfield(L, 3, "map");
  int map = lua_gettop(L);
  lua_getfield(L, 3, "edits");
  int edits = lua_gettop(L);
  lua_getfield(L, 3, "delete");
  int del = lua_gettop(L);
  lua_getfield(L, 3, "append");
  int append = lua_gettop(L);
  lua_getfield(L, 3, "eol");
  const char *eol = lua_tostring(L, -1);
  int bom = -1;
  if (lua_getfield(L, 3, "bom") != LUA_TNIL) bom = lua_toboolean(L, -1);
  size_t n = lua_rawlen(L, header);
  if (n == 0) return luaL_error(L, "csvedit.rewrite: empty header");
  size_t *srcidx = lua_newuserdatauv(L, n * sizeof *srcidx, 0);
  for (size_t j = 0; j < n; j++) {
    srcidx[j] = 0;
    if (lua_istable(L, map)) {
      lua_rawgeti(L, map, (lua_Integer)j + 1);
      srcidx[j] = (size_t)lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
  }
  ctx c = {0};
  c.f = calloc(n, sizeof *c.f);
  c.l = calloc(n, sizeof *c.l);
  char err[700];
  if (!c.f || !c.l) {
    ctx_close(&c);
    return luaL_error(L, "out of memory");
  }
  if (src) {
    c.r = ps_csv_open(src, 0, err, sizeof err);
    if (!c.r) {
      ctx_close(&c);
      return ps_fail(L, err);
    }
  }
  if (ps_csv_writer_open(&c.w, dst, eol, bom, err, sizeof err) != 0) {
    ctx_close(&c);
    return ps_fail(L, err);
  }
  c.wopen = 1;
  lua_Integer written = 0;
  if (write_array(L, &c, header, n, err, sizeof err) != 0) goto fail;
  if (c.r) {
    ps_csv_record rec;
    int st = ps_csv_next(c.r, &rec); /* the source header */
    lua_Integer row = 0;
    while (st > 0 && (st = ps_csv_next(c.r, &rec)) > 0) {
      row++;
      if (lua_istable(L, del) && lua_rawgeti(L, del, row) != LUA_TNIL && lua_toboolean(L, -1)) {
        lua_pop(L, 1);
        continue;
      }
      if (lua_istable(L, del)) lua_pop(L, 1);
      int e = 0;
      if (lua_istable(L, edits)) {
        if (lua_rawgeti(L, edits, row) == LUA_TTABLE) e = lua_gettop(L);
        else lua_pop(L, 1);
      }
      for (size_t j = 0; j < n; j++) {
        size_t i = srcidx[j];
        c.f[j] = "";
        c.l[j] = 0;
        if (i >= 1 && i <= rec.nfields) {
          c.f[j] = rec.fields[i - 1];
          c.l[j] = rec.lens[i - 1];
        }
      }
      if (e) { /* only the edited cells: walk the (small) edit table */
        lua_pushnil(L);
        while (lua_next(L, e)) {
          lua_Integer j = lua_tointeger(L, -2);
          size_t len;
          const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
          if (s && j >= 1 && (size_t)j <= n) c.f[j - 1] = s, c.l[j - 1] = len;
          lua_pop(L, 1); /* the edits table keeps the string alive */
        }
      }
      if (e) lua_settop(L, e - 1);
      if (put_row(&c, n, err, sizeof err) != 0) goto fail;
      written++;
    }
    if (st < 0) {
      snprintf(err, sizeof err, "%s", ps_csv_error(c.r));
      goto fail;
    }
  }
  if (lua_istable(L, append)) {
    lua_Integer na = (lua_Integer)lua_rawlen(L, append);
    for (lua_Integer k = 1; k <= na; k++) {
      lua_rawgeti(L, append, k);
      if (!lua_istable(L, -1)) {
        ctx_close(&c);
        return luaL_error(L, "csvedit.rewrite: append[%d] is not a table", (int)k);
      }
      int t = lua_gettop(L);
      if (write_array(L, &c, t, n, err, sizeof err) != 0) goto fail;
      lua_pop(L, 1);
      written++;
    }
  }
  if (c.r) {
    ps_csv_close(c.r);
    c.r = NULL;
  }
  c.wopen = 0;
  int status = ps_csv_writer_commit(&c.w, 1, err, sizeof err);
  ctx_close(&c);
  int nret = ps_push_write_result(L, status, err);
  if (nret == 1) {
    lua_pushinteger(L, written);
    nret = 2;
  }
  return nret;
fail:
  ctx_close(&c);
  return ps_fail(L, err);
}

/* ---- csvedit.merge: index, match, update, prune and rewrite in one pass ------------------ */

#define parse_float ps_num_or_zero
#define real ps_num_duration_cell

static int same_trimmed(const char *a, size_t la, const char *b, size_t lb) {
  while (la && (*a == ' ' || (*a >= '\t' && *a <= '\r'))) a++, la--;
  while (la && (a[la - 1] == ' ' || (a[la - 1] >= '\t' && a[la - 1] <= '\r'))) la--;
  while (lb && (*b == ' ' || (*b >= '\t' && *b <= '\r'))) b++, lb--;
  while (lb && (b[lb - 1] == ' ' || (b[lb - 1] >= '\t' && b[lb - 1] <= '\r'))) lb--;
  return la == lb && memcmp(a, b, la) == 0;
}

/* Signature hash -> first row, count and the first row's display text (in an arena): a
 * u64map from the hash to an index into v. */
typedef struct msig { uint32_t first, count; size_t disp; } msig;
typedef struct mmap_ { ps_u64map map; msig *v; size_t cap; char *arena; size_t alen, acap; } mmap_;

/* "<Input Shapes or N/A> -> <Output Shapes or N/A>" appended to the arena; returns its offset. */
static long add_display(mmap_ *m, const char *is, size_t il, const char *os, size_t ol) {
  size_t n = (il ? il : 3) + 4 + (ol ? ol : 3) + 1;
  if (m->alen + n > m->acap) {
    size_t cap = m->acap ? m->acap * 2 : 1 << 20;
    while (cap < m->alen + n) cap *= 2;
    char *a = realloc(m->arena, cap);
    if (!a) return -1;
    m->arena = a;
    m->acap = cap;
  }
  size_t off = m->alen;
  char *p = m->arena + off;
  memcpy(p, il ? is : "N/A", il ? il : 3), p += il ? il : 3;
  memcpy(p, " -> ", 4), p += 4;
  memcpy(p, ol ? os : "N/A", ol ? ol : 3), p += ol ? ol : 3;
  *p = '\0';
  m->alen += n;
  return (long)off;
}

static void trimmed(const char **s, size_t *len) {
  while (*len && (**s == ' ' || (**s >= '\t' && **s <= '\r'))) (*s)++, (*len)--;
  while (*len && ((*s)[*len - 1] == ' ' || ((*s)[*len - 1] >= '\t' && (*s)[*len - 1] <= '\r'))) (*len)--;
}

static int opt_int(lua_State *L, int t, const char *k) {
  lua_getfield(L, t, k);
  int v = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Source column (0-based) of a signature column, or -1. */
static int src_col(lua_State *L, int t, const char *k) { return opt_int(L, t, k) - 1; }

static int l_merge(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checkstack(L, 64, NULL);
  int sp = 2;
  lua_getfield(L, sp, "header");
  int header = lua_gettop(L);
  luaL_checktype(L, header, LUA_TTABLE);
  lua_getfield(L, sp, "map");
  int map = lua_gettop(L);
  lua_getfield(L, sp, "updates");
  int updates = lua_gettop(L);
  lua_getfield(L, sp, "copy");
  int copy = lua_gettop(L);
  lua_getfield(L, sp, "fill");
  int fill = lua_gettop(L);
  lua_getfield(L, sp, "append");
  int append_fn = lua_gettop(L);
  lua_getfield(L, sp, "op");
  const char *op = lua_tostring(L, -1);
  lua_getfield(L, sp, "ep_default");
  const char *ep_default = lua_tostring(L, -1);
  int mode_all = (lua_getfield(L, sp, "mode_all"), lua_toboolean(L, -1));
  int prune = (lua_getfield(L, sp, "prune"), lua_toboolean(L, -1));
  /* source columns (0-based) */
  lua_getfield(L, sp, "src");
  int srct = lua_gettop(L);
  int c_mb = src_col(L, srct, "mb"), c_prof = src_col(L, srct, "prof");
  int c_type = src_col(L, srct, "OP Type"), c_state = src_col(L, srct, "OP State");
  int c_is = src_col(L, srct, "Input Shapes"), c_id = src_col(L, srct, "Input Data Types");
  int c_if = src_col(L, srct, "Input Formats"), c_os = src_col(L, srct, "Output Shapes");
  int c_od = src_col(L, srct, "Output Data Types"), c_ep = src_col(L, srct, "EP Size");
  int mb_out = opt_int(L, sp, "mb_out"); /* 1-based output column of the microbench duration */
  size_t n = lua_rawlen(L, header);
  if (n == 0) return luaL_error(L, "csvedit.merge: empty header");
  size_t *srcidx = lua_newuserdatauv(L, n * sizeof *srcidx, 0);
  for (size_t j = 0; j < n; j++) {
    lua_rawgeti(L, map, (lua_Integer)j + 1);
    srcidx[j] = (size_t)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  /* fill: output column -> value for every row */
  const char **fillv = lua_newuserdatauv(L, n * sizeof *fillv, 0);
  for (size_t j = 0; j < n; j++) {
    fillv[j] = NULL;
    if (lua_istable(L, fill)) {
      lua_rawgeti(L, fill, (lua_Integer)j + 1);
      fillv[j] = lua_tostring(L, -1); /* referenced by the fill table */
      lua_pop(L, 1);
    }
  }
  /* The update hashes as a C set, so that rows without an update cost no Lua lookup. */
  ps_u64map uset;
  ps_u64map_init(&uset, 1 << 16);
  if (lua_istable(L, updates)) {
    lua_pushnil(L);
    while (lua_next(L, updates)) {
      lua_pop(L, 1);
      if (lua_isinteger(L, -1)) {
        size_t none = 0;
        if (ps_u64map_put(&uset, (uint64_t)lua_tointeger(L, -1), &none) < 0) {
          ps_u64map_free(&uset);
          return luaL_error(L, "out of memory");
        }
      }
    }
  }
  /* copy: {{key, output column}, ...} copied from an update's row */
  int ncopy = lua_istable(L, copy) ? (int)lua_rawlen(L, copy) : 0;
  char *numbuf = lua_newuserdatauv(L, (size_t)(ncopy ? ncopy : 1) * 32, 0);
  /* mcols: output column of each packed counter mean (an update row's _m), 0 when absent */
  int mcol[25] = {0};
  lua_getfield(L, sp, "mcols");
  for (int k = 0; k < 25 && lua_istable(L, -1); k++) {
    lua_rawgeti(L, -1, k + 1);
    mcol[k] = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  char *mbuf = lua_newuserdatauv(L, 25 * 32, 0);
  lua_newtable(L);
  int gaps = lua_gettop(L);
  lua_newtable(L);
  int deleted = lua_gettop(L);
  lua_newtable(L);
  int matched = lua_gettop(L);
  lua_Integer ngaps = 0, ndeleted = 0, nupdated = 0, nunchanged = 0, rows = 0, written = 0;
  int changed = 0;
  ctx c = {0};
  mmap_ m = {0};
  ps_u64map_init(&m.map, 1 << 16);
  ps_sig *g = ps_sig_new();
  c.f = calloc(n, sizeof *c.f);
  c.l = calloc(n, sizeof *c.l);
  char err[700];
  if (!g || !c.f || !c.l || ps_u64map_reserve(&m.map, 1) != 0) {
    snprintf(err, sizeof err, "out of memory");
    goto fail;
  }
  c.r = ps_csv_open(path, 0, err, sizeof err);
  if (!c.r) goto fail;
  if (ps_csv_writer_open(&c.w, path, NULL, -1, err, sizeof err) != 0) goto fail;
  c.wopen = 1;
  if (write_array(L, &c, header, n, err, sizeof err) != 0) goto fail;
  ps_csv_record rec;
  int st = ps_csv_next(c.r, &rec); /* the source header */
  while (st > 0 && (st = ps_csv_next(c.r, &rec)) > 0) {
    rows++;
#define FLD(ci) ((ci) >= 0 && (size_t)(ci) < rec.nfields ? rec.fields[ci] : "")
#define LEN(ci) ((ci) >= 0 && (size_t)(ci) < rec.nfields ? rec.lens[ci] : 0)
    ps_sig_row sr = {.op_name = op, .op_type = c_type >= 0 ? FLD(c_type) : NULL,
                     .op_state = c_state >= 0 ? FLD(c_state) : NULL,
                     .in_shapes = c_is >= 0 ? FLD(c_is) : NULL, .in_dtypes = c_id >= 0 ? FLD(c_id) : NULL,
                     .in_formats = c_if >= 0 ? FLD(c_if) : NULL, .out_shapes = c_os >= 0 ? FLD(c_os) : NULL,
                     .out_dtypes = c_od >= 0 ? FLD(c_od) : NULL,
                     .ep_size = c_ep >= 0 ? FLD(c_ep) : ep_default};
    if (ps_sig_compute(g, &sr) != 0) {
      snprintf(err, sizeof err, "out of memory");
      goto fail;
    }
    uint64_t h = ps_sig_hash(g);
    size_t sid = m.map.used;
    int first = ps_u64map_put(&m.map, h, &sid);
    if (first < 0) {
      snprintf(err, sizeof err, "out of memory");
      goto fail;
    }
    const char *is = FLD(c_is), *os = FLD(c_os);
    size_t il = LEN(c_is), ol = LEN(c_os);
    trimmed(&is, &il);
    trimmed(&os, &ol);
    if (first) {
      long off = add_display(&m, is, il, os, ol);
      if (off < 0 || ps_grow((void **)&m.v, &m.cap, sid + 1, sizeof *m.v) != 0) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
      }
      m.v[sid] = (msig){(uint32_t)rows, 1, (size_t)off};
    } else {
      m.v[sid].count++;
    }
    for (size_t j = 0; j < n; j++) {
      size_t i = srcidx[j];
      c.f[j] = "";
      c.l[j] = 0;
      if (i >= 1 && i <= rec.nfields) c.f[j] = rec.fields[i - 1], c.l[j] = rec.lens[i - 1];
      if (fillv[j]) {
        size_t fl = strlen(fillv[j]);
        if (!(fl == c.l[j] && memcmp(fillv[j], c.f[j], fl) == 0)) changed = 1;
        c.f[j] = fillv[j], c.l[j] = fl;
      }
    }
    const char *mb = FLD(c_mb);
    size_t mbl = LEN(c_mb);
    int prof_real = real(FLD(c_prof), LEN(c_prof));
    int upd = 0;
    if (first && ps_u64map_get(&uset, h) != PS_U64MAP_NONE) {
      upd = lua_rawgeti(L, updates, (lua_Integer)h) == LUA_TTABLE;
      if (!upd) lua_pop(L, 1);
    }
    if (upd) {
      int u = lua_gettop(L);
      lua_pushboolean(L, 1);
      lua_rawseti(L, matched, (lua_Integer)h);
      lua_getfield(L, u, "mb");
      size_t nl = 0;
      const char *newmb = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &nl) : NULL;
      lua_getfield(L, u, "record");
      int record = lua_toboolean(L, -1);
      lua_getfield(L, u, "row");
      int urow = lua_gettop(L);
      int can = mode_all || (!real(mb, mbl) && !prof_real);
      int counted = 0;
      if (can && newmb) {
        for (int k = 1; k <= ncopy; k++) {
          lua_rawgeti(L, copy, k);
          lua_rawgeti(L, -1, 1);
          lua_gettable(L, urow);
          lua_rawgeti(L, -2, 2);
          lua_Integer oc = lua_tointeger(L, -1);
          lua_pop(L, 1);
          int ty = lua_type(L, -1);
          if ((ty == LUA_TSTRING || ty == LUA_TNUMBER) && oc >= 1 && (size_t)oc <= n) {
            size_t vl;
            const char *v;
            if (ty == LUA_TNUMBER) { /* counter means: formatted here, no Lua string */
              char *b = numbuf + (size_t)(k - 1) * 32;
              vl = (size_t)snprintf(b, 32, "%.6f", (double)lua_tonumber(L, -1));
              v = b;
            } else {
              v = lua_tolstring(L, -1, &vl); /* referenced by the update's row */
            }
            if (!(vl == c.l[oc - 1] && memcmp(v, c.f[oc - 1], vl) == 0)) changed = 1;
            c.f[oc - 1] = v, c.l[oc - 1] = vl;
          }
          lua_pop(L, 2);
        }
        lua_getfield(L, urow, "_m");
        size_t pl = 0;
        const char *packed = lua_tolstring(L, -1, &pl);
        if (packed && pl == 25 * sizeof(double)) {
          for (int k = 0; k < 25; k++) {
            int oc = mcol[k];
            if (oc < 1 || (size_t)oc > n) continue;
            double v;
            memcpy(&v, packed + k * sizeof v, sizeof v);
            char *b = mbuf + k * 32;
            size_t vl = isnan(v) ? 0 : (size_t)snprintf(b, 32, "%.6f", v);
            if (isnan(v)) b[0] = '\0';
            if (!(vl == c.l[oc - 1] && memcmp(b, c.f[oc - 1], vl) == 0)) changed = 1;
            c.f[oc - 1] = b, c.l[oc - 1] = vl;
          }
        }
        lua_pop(L, 1);
        if (mb_out >= 1 && (size_t)mb_out <= n) {
          if (!(nl == c.l[mb_out - 1] && memcmp(newmb, c.f[mb_out - 1], nl) == 0)) changed = 1;
          c.f[mb_out - 1] = newmb, c.l[mb_out - 1] = nl;
        }
        if (!same_trimmed(mb, mbl, newmb, nl)) nupdated++;
        mb = newmb, mbl = nl;
        counted = 1;
      } else if (record) {
        nunchanged++;
        counted = 1;
      }
      if (counted) {
        double mv = parse_float(mb, mbl), pv = parse_float(FLD(c_prof), LEN(c_prof));
        if (mv > 0 && pv > 0) {
          lua_createtable(L, 3, 0);
          lua_pushnumber(L, mv);
          lua_rawseti(L, -2, 1);
          lua_pushnumber(L, pv);
          lua_rawseti(L, -2, 2);
          lua_pushstring(L, m.arena + m.v[sid].disp);
          lua_rawseti(L, -2, 3);
          lua_rawseti(L, gaps, ++ngaps);
        }
      }
      /* the strings stay referenced until the row is written: pop after writing */
      if (prune && !real(mb, mbl) && !prof_real) goto drop_upd;
      if (put_row(&c, n, err, sizeof err) != 0) goto fail;
      written++;
      lua_settop(L, u - 1);
      continue;
    drop_upd:
      lua_pushstring(L, m.arena + m.v[sid].disp);
      lua_rawseti(L, deleted, ++ndeleted);
      changed = 1;
      lua_settop(L, u - 1);
      continue;
    }
    if (prune && !real(mb, mbl) && !prof_real) {
      if (first) {
        lua_pushstring(L, m.arena + m.v[sid].disp);
      } else {
        char tmp[64];
        long off = add_display(&m, is, il, os, ol); /* a duplicate's own display */
        (void)tmp;
        if (off < 0) {
          snprintf(err, sizeof err, "out of memory");
          goto fail;
        }
        lua_pushstring(L, m.arena + off);
        m.alen = (size_t)off;
      }
      lua_rawseti(L, deleted, ++ndeleted);
      changed = 1;
      continue;
    }
    if (put_row(&c, n, err, sizeof err) != 0) goto fail;
    written++;
#undef FLD
#undef LEN
  }
  if (st < 0) {
    snprintf(err, sizeof err, "%s", ps_csv_error(c.r));
    goto fail;
  }
  ps_csv_close(c.r);
  c.r = NULL;
  /* rows to append, chosen by the caller now that the matches are known */
  if (lua_isfunction(L, append_fn)) {
    lua_pushvalue(L, append_fn);
    lua_pushvalue(L, matched);
    lua_call(L, 1, 1);
    int app = lua_gettop(L);
    if (lua_istable(L, app)) {
      lua_Integer na = (lua_Integer)lua_rawlen(L, app);
      for (lua_Integer k = 1; k <= na; k++) {
        lua_rawgeti(L, app, k);
        if (write_array(L, &c, lua_gettop(L), n, err, sizeof err) != 0) goto fail;
        lua_pop(L, 1);
        written++;
        changed = 1;
      }
    }
    lua_pop(L, 1);
  }
  lua_createtable(L, 0, 10);
  int res = lua_gettop(L);
  if (changed) {
    c.wopen = 0;
    int status = ps_csv_writer_commit(&c.w, 1, err, sizeof err);
    if (status < 0) goto fail;
    lua_pushstring(L, status == PS_ATOMIC_CREATED ? "created" : status == PS_ATOMIC_REPLACED ? "replaced" : "unchanged");
  } else {
    lua_pushliteral(L, "unchanged");
  }
  lua_setfield(L, res, "status");
  /* duplicates: {display, count} */
  lua_newtable(L);
  lua_Integer nd = 0;
  for (size_t j = 0; j < m.map.size; j++) { /* in slot order (merge.lua sorts them) */
    size_t id = ps_u64map_slot_id(&m.map, j);
    if (id == PS_U64MAP_NONE || m.v[id].count < 2) continue;
    lua_createtable(L, 2, 0);
    lua_pushstring(L, m.arena + m.v[id].disp);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, m.v[id].count);
    lua_rawseti(L, -2, 2);
    lua_rawseti(L, -2, ++nd);
  }
  lua_setfield(L, res, "duplicates");
  lua_pushvalue(L, gaps);
  lua_setfield(L, res, "gaps");
  lua_pushvalue(L, deleted);
  lua_setfield(L, res, "deleted");
  lua_pushvalue(L, matched);
  lua_setfield(L, res, "matched");
  lua_pushinteger(L, nupdated);
  lua_setfield(L, res, "updated");
  lua_pushinteger(L, nunchanged);
  lua_setfield(L, res, "unchanged");
  lua_pushinteger(L, rows);
  lua_setfield(L, res, "rows");
  lua_pushinteger(L, written);
  lua_setfield(L, res, "written");
  ctx_close(&c);
  ps_u64map_free(&m.map);
  free(m.v);
  free(m.arena);
  ps_u64map_free(&uset);
  ps_sig_free(g);
  return 1;
fail:
  ctx_close(&c);
  ps_u64map_free(&m.map);
  free(m.v);
  free(m.arena);
  ps_u64map_free(&uset);
  ps_sig_free(g);
  return ps_fail(L, err);
}

int luaopen_perfscript_csvedit(lua_State *L) {
  static const luaL_Reg funcs[] = {{"rewrite", l_rewrite}, {"merge", l_merge}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}
