/* perfscript.shape: shape cells and dtypes for Lua (grammar in shape.h).
 *   shape.parse(cell [, lenient]) -> {{d1, d2, ...}, {}, ...}   (an empty slot is {})
 *       a slot that is not a list of integers is an error (nil, message), or false when
 *       lenient is true
 *   shape.parse_plain(cell) -> {{d1, ...}, ...} | nil  (a cell in the plain form, blanks and
 *       quotes around it cut: its non-empty slots; nil for any other text)
 *   shape.format(slots) -> "a,b;;c"            (false/nil/empty slots are written empty)
 *   shape.normalize(cell) -> canonical text   shape.normalize_slot(text) -> text
 *   shape.split(cell) -> {"raw slot", ...}     (stripped slots, empty ones kept; "" -> {})
 *   shape.dtype_bytes(name) -> n (2 when unknown)
 *   shape.dtype_normalize(name) -> "DT_..."   (blank -> DT_UNDEFINED, else DT_ prefixed)
 *   shape.dtype_known(name) -> bool            shape.dtype_consumer(name) -> "INT8" | nil
 *   shape.dtype_consumer_scales(name) -> bool  (the consumer's spelling and scaling, shape.h)
 *   shape.numel(dims) -> n                     shape.nbytes(dims, dtype) -> n (0 for {})
 *   shape.nz_logical(dims) -> {..., b*c, a*d} for a FRACTAL_NZ shape (..., a, b, c, d), or nil, message
 *   shape.sort_key(slots [, n]) -> bytes that order slot lists slot by slot, dims as integers,
 *       a prefix first: per dim "\1" + 8 big-endian bytes (sign bit flipped), "\0" per slot;
 *       n appended as 4 big-endian bytes (a stable tie-break)
 *   shape.positive(slots, ...) -> true when every dim of every slot list is an integer > 0
 *   shape.over_limit(cell) -> nil, or why a signature cell is beyond the limits
 *       ("300 slots (the limit is 256)"); shape.MAX_SLOTS, shape.MAX_CELL (shape.h)
 *   shape.rows(dims, count, stride, ins, outs [, budget]) -> it, ot, order, n, memory, bad, src
 *       a grid's candidates in one call (perfscript.grid.run): dims holds count candidates of
 *       stride integers each; ins and outs lay out a row's slots as flat triples {offset into
 *       the candidate (0-based), rank (0: an empty slot), element bytes, ...}. A candidate whose
 *       row_bytes (perfscript.mem) exceeds budget is counted in memory; the others get
 *       it[n] = format(ins), ot[n] = format(outs), and order lists 1..n by sort_key(ins, n).
 *       bad: nil, or the first candidate (1-based) with a dim <= 0 or not an integer, where the
 *       work stopped. src: nil when row i is candidate i, else {candidate of row 1, ...}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lookup_key.h"
#include "mem.h"
#include "shape.h"
#include "text.h"

#define SHAPE_CACHE "perfscript.shape.cache"

static ps_shape *cache(lua_State *L) {
  return lua_touserdata(L, lua_upvalueindex(1));
}

static int shape_gc(lua_State *L) {
  ps_shape_free(luaL_checkudata(L, 1, SHAPE_CACHE));
  return 0;
}

static int l_parse(lua_State *L) {
  size_t len;
  const char *cell = luaL_optlstring(L, 1, "", &len);
  int lenient = lua_toboolean(L, 2);
  ps_shape *s = cache(L);
  if (ps_shape_parse(s, cell, len) != 0) return luaL_error(L, "out of memory");
  if (s->nbad && !lenient) {
    for (size_t i = 0; i < s->nslots; i++) {
      if (s->state[i] != PS_SLOT_BAD) continue;
      luaL_pushfail(L);
      lua_pushfstring(L, "shape cell '%s': slot %d is not a list of integer dims", cell,
                      (int)i + 1);
      return 2;
    }
  }
  lua_createtable(L, (int)s->nslots, 0);
  for (size_t i = 0; i < s->nslots; i++) {
    if (s->state[i] == PS_SLOT_BAD) {
      lua_pushboolean(L, 0);
    } else {
      size_t r = ps_shape_rank(s, i);
      const int64_t *d = ps_shape_slot(s, i);
      lua_createtable(L, (int)r, 0);
      for (size_t j = 0; j < r; j++) {
        lua_pushinteger(L, (lua_Integer)d[j]);
        lua_rawseti(L, -2, (lua_Integer)j + 1);
      }
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* The plain form of a shape cell, the one a grid and the import write ("4096,7168;;1"), once
 * blanks and quotes around it are cut: digits in comma lists, ';' between slots, no empty dim,
 * no leading zero, at most 15 digits a number. Pushes its non-empty slots as integer lists
 * (the consumer drops empty slots) and returns 1, or pushes nothing and returns 0 for any other
 * text (the caller's general parser reads those). */
static int push_plain(lua_State *L, const char *c, size_t n) {
  while (n && (*c == '"' || ps_is_space(*c))) c++, n--;
  while (n && (c[n - 1] == '"' || ps_is_space(c[n - 1]))) n--;
  if (n && (c[0] == ',' || c[n - 1] == ',')) return 0;
  for (size_t i = 0; i < n; i++) {  /* the whole check first: nothing is pushed on a refusal */
    unsigned char b = (unsigned char)c[i];
    if (b >= '0' && b <= '9') {
      size_t j = i;
      while (j < n && c[j] >= '0' && c[j] <= '9') j++;
      if ((c[i] == '0' && j - i > 1) || j - i > 15) return 0;
      i = j - 1;
    } else if (b == ',') {
      if (i + 1 < n && (c[i + 1] == ',' || c[i + 1] == ';')) return 0;
    } else if (b == ';') {
      if (i + 1 < n && c[i + 1] == ',') return 0;
    } else {
      return 0;
    }
  }
  lua_createtable(L, 4, 0);
  lua_Integer nslots = 0;
  for (size_t i = 0; i < n;) {
    if (c[i] == ';') { i++; continue; }
    lua_createtable(L, 4, 0);
    lua_Integer rank = 0;
    while (i < n && c[i] != ';') {
      lua_Integer v = 0;
      while (i < n && c[i] >= '0' && c[i] <= '9') v = v * 10 + (c[i++] - '0');
      lua_pushinteger(L, v);
      lua_rawseti(L, -2, ++rank);
      if (i < n && c[i] == ',') i++;
    }
    lua_rawseti(L, -2, ++nslots);
  }
  return 1;
}

static int l_parse_plain(lua_State *L) {
  size_t len;
  const char *cell = luaL_checklstring(L, 1, &len);
  if (!push_plain(L, cell, len)) luaL_pushfail(L);
  return 1;
}

static int l_format(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
  for (lua_Integer i = 1; i <= n; i++) {
    /* Read the slot into C first: the buffer needs a balanced stack when it grows. */
    int64_t d[64];
    size_t r = 0;
    int t = lua_rawgeti(L, 1, i);
    if (t == LUA_TTABLE) {
      r = lua_rawlen(L, -1);
      if (r > 64) return luaL_error(L, "shape.format: slot %d has more than 64 dims", (int)i);
      for (size_t j = 0; j < r; j++) {
        lua_rawgeti(L, -1, (lua_Integer)j + 1);
        int isint;
        d[j] = (int64_t)lua_tointegerx(L, -1, &isint);
        if (!isint)
          return luaL_error(L, "shape.format: slot %d dim %d is not an integer", (int)i, (int)j + 1);
        lua_pop(L, 1);
      }
    } else if (t != LUA_TNIL && !(t == LUA_TBOOLEAN && !lua_toboolean(L, -1))) {
      return luaL_error(L, "shape.format: slot %d is a %s, not a table", (int)i,
                        luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    if (i > 1) luaL_addchar(&b, ';');
    for (size_t j = 0; j < r; j++) {
      char num[32];  /* ps_lookup_key_int, not snprintf: a tenth of a shape grid's time */
      size_t k = 0;
      if (j) num[k++] = ',';
      k += ps_lookup_key_int(num + k, d[j]);
      luaL_addlstring(&b, num, k);
    }
  }
  luaL_pushresult(&b);
  return 1;
}

/* shape.skeleton(cell) -> the cell with each run of characters other than ';' written "x"
 * ("1,2;;3" -> "x;;x"), or nil when it holds a character other than a digit , ; ( ): the
 * slot layout of a plain shape cell (cell:gsub("[^;]+", "x") after cell:find("[^%d,;()]")). */
static int l_skeleton(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || c == ',' || c == ';' || c == '(' || c == ')')) {
      lua_pushnil(L);
      return 1;
    }
  }
  luaL_Buffer b;
  char *out = luaL_buffinitsize(L, &b, len + 1);
  size_t k = 0;
  int run = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == ';') { out[k++] = ';'; run = 0; }
    else if (!run) { out[k++] = 'x'; run = 1; }
  }
  luaL_pushresultsize(&b, k);
  return 1;
}

static int l_normalize(lua_State *L) {
  size_t len;
  const char *cell = luaL_optlstring(L, 1, "", &len);
  luaL_Buffer b;
  char *out = luaL_buffinitsize(L, &b, len + 1);
  luaL_pushresultsize(&b, ps_shape_norm_cell(cell, len, out));
  return 1;
}

static int l_normalize_slot(lua_State *L) {
  size_t len;
  const char *s = luaL_optlstring(L, 1, "", &len);
  luaL_Buffer b;
  char *out = luaL_buffinitsize(L, &b, len + 1);
  luaL_pushresultsize(&b, ps_shape_norm_slot(s, len, out));
  return 1;
}

static int l_split(lua_State *L) {
  size_t n;
  const char *cell = luaL_optlstring(L, 1, "", &n);
  n = ps_shape_strip(&cell, n);
  lua_newtable(L);
  if (n == 0) return 1;
  size_t start = 0;
  lua_Integer k = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && cell[i] != ';') continue;
    const char *p = cell + start;
    size_t len = ps_shape_strip(&p, i - start);
    lua_pushlstring(L, p, len);
    lua_rawseti(L, -2, ++k);
    start = i + 1;
  }
  return 1;
}

static int l_dtype_bytes(lua_State *L) {
  size_t len;
  const char *s = luaL_optlstring(L, 1, "", &len);
  lua_pushinteger(L, ps_dtype_bytes(s, len));
  return 1;
}

static int l_dtype_known(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_pushboolean(L, ps_dtype_known(s, len));
  return 1;
}

static int l_dtype_consumer(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  const char *c = ps_dtype_consumer(s, len);
  if (c) lua_pushstring(L, c); else lua_pushnil(L);
  return 1;
}

static int l_dtype_consumer_scales(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_pushboolean(L, ps_dtype_consumer_scales(s, len));
  return 1;
}

static int l_dtype_normalize(lua_State *L) {
  size_t len;
  const char *s = luaL_optlstring(L, 1, "", &len);
  ps_trim(&s, &len);
  if (len == 0) lua_pushliteral(L, "DT_UNDEFINED");
  else if (len >= 3 && memcmp(s, "DT_", 3) == 0) lua_pushlstring(L, s, len);
  else {
    lua_pushliteral(L, "DT_");
    lua_pushlstring(L, s, len);
    lua_concat(L, 2);
  }
  return 1;
}

/* Reads a dims table into d (at most 64); returns the rank. */
static size_t get_dims(lua_State *L, int idx, int64_t *d) {
  luaL_checktype(L, idx, LUA_TTABLE);
  size_t r = lua_rawlen(L, idx);
  if (r > 64) luaL_error(L, "shape has %d dims (at most 64)", (int)r);
  for (size_t i = 0; i < r; i++) {
    lua_rawgeti(L, idx, (lua_Integer)i + 1);
    int isint;
    d[i] = (int64_t)lua_tointegerx(L, -1, &isint);
    if (!isint) luaL_error(L, "dim %d is not an integer", (int)i + 1);
    lua_pop(L, 1);
  }
  return r;
}

static int l_numel(lua_State *L) {
  int64_t d[64];
  size_t r = get_dims(L, 1, d);
  uint64_t n = r ? ps_shape_nbytes(d, r, 1) : 1;
  lua_pushinteger(L, n > (uint64_t)LUA_MAXINTEGER ? LUA_MAXINTEGER : (lua_Integer)n);
  return 1;
}

static int l_nbytes(lua_State *L) {
  int64_t d[64];
  size_t r = get_dims(L, 1, d);
  size_t len;
  const char *dt = luaL_optlstring(L, 2, "", &len);
  uint64_t n = ps_shape_nbytes(d, r, ps_dtype_bytes(dt, len));
  lua_pushinteger(L, n > (uint64_t)LUA_MAXINTEGER ? LUA_MAXINTEGER : (lua_Integer)n);
  return 1;
}

/* (..., n1, k1, k0, n0) -> (..., k1*k0, n1*n0): the last four dims are the NZ blocks, any
 * before them batch dims (a grouped matmul's experts). */
static int l_nz_logical(lua_State *L) {
  int64_t d[64];
  size_t r = get_dims(L, 1, d);
  int64_t k, n;
  if (r < 4) {
    luaL_pushfail(L);
    lua_pushfstring(L, "Unsupported FRACTAL_NZ shape: rank %d (needs at least 4 dims)", (int)r);
    return 2;
  }
  if (__builtin_mul_overflow(d[r - 3], d[r - 2], &k) || __builtin_mul_overflow(d[r - 4], d[r - 1], &n)) {
    luaL_pushfail(L);
    lua_pushliteral(L, "FRACTAL_NZ shape: the restored dims leave int64");
    return 2;
  }
  lua_createtable(L, (int)r - 2, 0);
  for (size_t i = 0; i + 4 < r; i++) {
    lua_pushinteger(L, (lua_Integer)d[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_pushinteger(L, (lua_Integer)k);
  lua_rawseti(L, -2, (lua_Integer)r - 3);
  lua_pushinteger(L, (lua_Integer)n);
  lua_rawseti(L, -2, (lua_Integer)r - 2);
  return 1;
}

static int l_over_limit(lua_State *L) {
  size_t len;
  const char *cell = luaL_checklstring(L, 1, &len);
  char why[96];
  if (ps_shape_over_limit(cell, len, why, sizeof why) == NULL) return 0;
  lua_pushstring(L, why);
  return 1;
}

static int l_sort_key(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);  /* the buffer's slots go above the arguments */
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_Integer ns = (lua_Integer)lua_rawlen(L, 1);
  for (lua_Integer i = 1; i <= ns; i++) {
    lua_rawgeti(L, 1, i);
    luaL_argcheck(L, lua_type(L, -1) == LUA_TTABLE, 1, "slots must be tables");
    lua_Integer nd = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer j = 1; j <= nd; j++) {
      lua_rawgeti(L, -1, j);
      int isnum;
      lua_Integer d = lua_tointegerx(L, -1, &isnum);
      if (!isnum) return luaL_error(L, "slot %d dim %d is not an integer", (int)i, (int)j);
      lua_pop(L, 1);
      unsigned char k[PS_SHAPE_KEY_DIM];
      ps_shape_key_dim(k, (int64_t)d);
      lua_pop(L, 1);  /* the slot: the buffer may use the stack top */
      luaL_addlstring(&b, (const char *)k, PS_SHAPE_KEY_DIM);
      lua_rawgeti(L, 1, i);
    }
    lua_pop(L, 1);
    luaL_addchar(&b, '\0');
  }
  if (!lua_isnoneornil(L, 2)) {
    uint32_t n = (uint32_t)luaL_checkinteger(L, 2);
    char k[4] = {(char)(n >> 24), (char)(n >> 16), (char)(n >> 8), (char)n};
    luaL_addlstring(&b, k, 4);
  }
  luaL_pushresult(&b);
  return 1;
}

static int l_positive(lua_State *L) {
  int top = lua_gettop(L);
  for (int a = 1; a <= top; a++) {
    luaL_checktype(L, a, LUA_TTABLE);
    lua_Integer ns = (lua_Integer)lua_rawlen(L, a);
    for (lua_Integer i = 1; i <= ns; i++) {
      if (lua_rawgeti(L, a, i) != LUA_TTABLE) { lua_pushboolean(L, 0); return 1; }
      lua_Integer nd = (lua_Integer)lua_rawlen(L, -1);
      for (lua_Integer j = 1; j <= nd; j++) {
        lua_rawgeti(L, -1, j);
        int ok = lua_isinteger(L, -1) && lua_tointeger(L, -1) > 0;
        lua_pop(L, 1);
        if (!ok) { lua_pushboolean(L, 0); return 1; }
      }
      lua_pop(L, 1);
    }
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* ---- shape.rows ------------------------------------------------------------------------- */

/* Reads a layout table of triples into lay (3 ints a slot); returns the slot count. */
static int rows_layout(lua_State *L, int idx, lua_Integer stride, lua_Integer *lay) {
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  luaL_argcheck(L, n % 3 == 0 && n / 3 <= PS_SHAPE_MAX_SLOTS, idx, "triples {offset, rank, bytes}");
  for (lua_Integer i = 0; i < n; i++) {
    lua_rawgeti(L, idx, i + 1);
    int ok;
    lay[i] = lua_tointegerx(L, -1, &ok);
    lua_pop(L, 1);
    luaL_argcheck(L, ok, idx, "layout entries must be integers");
  }
  for (lua_Integer s = 0; s < n; s += 3)
    luaL_argcheck(L, lay[s] >= 0 && lay[s + 1] >= 0 && lay[s + 1] <= 64 && lay[s] + lay[s + 1] <= stride,
                  idx, "slot outside the candidate");
  return (int)(n / 3);
}

/* Appends the text of a row's slots (format's "a,b;;c") to buf; returns its length. */
static size_t rows_text(char *buf, const int64_t *c, const lua_Integer *lay, int ns) {
  size_t k = 0;
  for (int s = 0; s < ns; s++) {
    if (s) buf[k++] = ';';
    const int64_t *d = c + lay[3 * s];
    for (lua_Integer j = 0; j < lay[3 * s + 1]; j++) {
      if (j) buf[k++] = ',';
      k += ps_lookup_key_int(buf + k, d[j]);
    }
  }
  return k;
}

static uint64_t rows_bytes(const int64_t *c, const lua_Integer *lay, int ns) {
  uint64_t t = 0;
  for (int s = 0; s < ns; s++)
    t = ps_mem_add(t, ps_shape_nbytes(c + lay[3 * s], (size_t)lay[3 * s + 1], (int)lay[3 * s + 2]));
  return t;
}

static int rows_positive(const int64_t *c, const lua_Integer *lay, int ns) {
  for (int s = 0; s < ns; s++)
    for (lua_Integer j = 0; j < lay[3 * s + 1]; j++)
      if (c[lay[3 * s] + j] <= 0) return 0;
  return 1;
}

static int l_rows(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer count = luaL_checkinteger(L, 2), stride = luaL_checkinteger(L, 3);
  luaL_argcheck(L, count >= 0 && count < (lua_Integer)1 << 31, 2, "count out of range");
  luaL_argcheck(L, stride >= 0 && stride <= 4096, 3, "stride out of range");
  lua_settop(L, 6);  /* the scratch userdata go above the arguments */
  lua_Integer *lin = lua_newuserdatauv(L, sizeof(lua_Integer) * 3 * (PS_SHAPE_MAX_SLOTS + 1), 0);
  lua_Integer *lout = lua_newuserdatauv(L, sizeof(lua_Integer) * 3 * (PS_SHAPE_MAX_SLOTS + 1), 0);
  int nin = rows_layout(L, 4, stride, lin), nout = rows_layout(L, 5, stride, lout);
  int has_budget = !lua_isnoneornil(L, 6);
  int budget_int = has_budget && lua_isinteger(L, 6);
  lua_Integer budget = budget_int ? lua_tointeger(L, 6) : 0;
  if (has_budget && !budget_int) luaL_checknumber(L, 6);
  size_t key_max = 4, text_max = 1;
  for (int s = 0; s < nin; s++) { key_max += 1 + PS_SHAPE_KEY_DIM * (size_t)lin[3 * s + 1]; text_max += 1 + 21 * (size_t)lin[3 * s + 1]; }
  for (int s = 0; s < nout; s++) text_max += 1 + 21 * (size_t)lout[3 * s + 1];
  /* the candidates, the sort keys and the scratch text: userdata (an error leaks nothing) */
  int64_t *dims = lua_newuserdatauv(L, sizeof(int64_t) * (size_t)(count * stride + 1), 0);
  unsigned char *keys = lua_newuserdatauv(L, key_max * (size_t)(count ? count : 1), 0);
  ps_shape_key *order = lua_newuserdatauv(L, sizeof(ps_shape_key) * (size_t)(count ? count : 1), 0);
  char *text = lua_newuserdatauv(L, text_max, 0);
  lua_Integer *src = lua_newuserdatauv(L, sizeof(lua_Integer) * (size_t)(count ? count : 1), 0);
  for (lua_Integer i = 0; i < count * stride; i++) {
    lua_rawgeti(L, 1, i + 1);
    int ok;
    dims[i] = (int64_t)lua_tointegerx(L, -1, &ok);
    lua_pop(L, 1);
    if (!ok) dims[i] = 0;  /* not an integer: bad where a slot reads it (the caller says why) */
  }
  lua_createtable(L, (int)count, 0);  /* it */
  lua_createtable(L, (int)count, 0);  /* ot */
  int it = lua_gettop(L) - 1, ot = it + 1;
  lua_Integer n = 0, memory = 0, bad = 0;
  unsigned char *kp = keys;
  for (lua_Integer i = 0; i < count; i++) {
    const int64_t *c = dims + i * stride;
    if (!rows_positive(c, lin, nin) || !rows_positive(c, lout, nout)) { bad = i + 1; break; }
    if (has_budget) {
      uint64_t b = ps_mem_add(rows_bytes(c, lin, nin), rows_bytes(c, lout, nout));
      lua_Integer bi = b > (uint64_t)LUA_MAXINTEGER ? LUA_MAXINTEGER : (lua_Integer)b;
      int over;
      if (budget_int) over = bi > budget;
      else { lua_pushinteger(L, bi); over = lua_compare(L, 6, -1, LUA_OPLT); lua_pop(L, 1); }
      if (over) { memory++; continue; }
    }
    src[n++] = i + 1;
    lua_pushlstring(L, text, rows_text(text, c, lin, nin));
    lua_rawseti(L, it, n);
    lua_pushlstring(L, text, rows_text(text, c, lout, nout));
    lua_rawseti(L, ot, n);
    /* sort_key(ins, n): per dim "\1" + 8 big-endian bytes (sign flipped), "\0" per slot, n */
    unsigned char *k0 = kp;
    for (int s = 0; s < nin; s++) {
      const int64_t *d = c + lin[3 * s];
      for (lua_Integer j = 0; j < lin[3 * s + 1]; j++, kp += PS_SHAPE_KEY_DIM) ps_shape_key_dim(kp, d[j]);
      *kp++ = 0;
    }
    uint32_t u = (uint32_t)n;
    *kp++ = (unsigned char)(u >> 24), *kp++ = (unsigned char)(u >> 16);
    *kp++ = (unsigned char)(u >> 8), *kp++ = (unsigned char)u;
    order[n - 1].s = k0;
    order[n - 1].len = (size_t)(kp - k0);
  }
  qsort(order, (size_t)n, sizeof *order, ps_shape_key_cmp);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer i = 0; i < n; i++) {
    const unsigned char *e = order[i].s + order[i].len - 4;
    lua_pushinteger(L, (lua_Integer)((uint32_t)e[0] << 24 | (uint32_t)e[1] << 16 | (uint32_t)e[2] << 8 | e[3]));
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushinteger(L, n);
  lua_pushinteger(L, memory);
  if (bad) lua_pushinteger(L, bad); else lua_pushnil(L);
  if (memory == 0) {
    lua_pushnil(L);
  } else {
    lua_createtable(L, (int)n, 0);
    for (lua_Integer i = 0; i < n; i++) {
      lua_pushinteger(L, src[i]);
      lua_rawseti(L, -2, i + 1);
    }
  }
  return 7;
}

int luaopen_perfscript_shape(lua_State *L) {
  static const luaL_Reg funcs[] = {
    {"parse", l_parse}, {"parse_plain", l_parse_plain}, {"format", l_format}, {"normalize", l_normalize},
    {"normalize_slot", l_normalize_slot}, {"split", l_split}, {"dtype_bytes", l_dtype_bytes},
    {"dtype_known", l_dtype_known}, {"dtype_consumer", l_dtype_consumer},
    {"dtype_consumer_scales", l_dtype_consumer_scales},
    {"dtype_normalize", l_dtype_normalize}, {"numel", l_numel}, {"nbytes", l_nbytes},
    {"nz_logical", l_nz_logical}, {"over_limit", l_over_limit},
    {"sort_key", l_sort_key}, {"positive", l_positive}, {"skeleton", l_skeleton},
    {"rows", l_rows}, {NULL, NULL}};
  luaL_newlibtable(L, funcs);
  ps_shape *s = lua_newuserdatauv(L, sizeof *s, 0);
  ps_shape_init(s);
  if (luaL_newmetatable(L, SHAPE_CACHE)) {
    lua_pushcfunction(L, shape_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  luaL_setfuncs(L, funcs, 1);
  lua_pushinteger(L, PS_SHAPE_MAX_SLOTS);
  lua_setfield(L, -2, "MAX_SLOTS");
  lua_pushinteger(L, PS_SHAPE_MAX_CELL);
  lua_setfield(L, -2, "MAX_CELL");
  return 1;
}
