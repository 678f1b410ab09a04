/* perfscript.fs: the file operations that keep a database safe.
 *   fs.lock(dir[, {wait = true, timeout = seconds, quiet = false}]) -> lock (lock:release(),
 *     <close>); once held, the temporary files of writes killed mid-way (dead processes) are
 *     removed and said on stderr (unless quiet); lock:recovered() lists them
 *   fs.write_atomic(path, text[, {if_changed = true, stage = st, append = false}]) -> "created"|"replaced"|"unchanged"
 *     text: a string, or a function called until it returns nil, each string it returns
 *     written in order (a big text made and dropped piece by piece); in place of a string, a
 *     perfscript.text (luabind.h: C buffers, written without a copy into Lua, freed once written)
 *     append: text goes after the file's current bytes, which are copied into the temporary
 *     file by the kernel (reflink or copy_file_range: atomicfile.h), not read into Lua
 *   fs.stage() -> st: writes of one run, replaced together (stage.h). Give {stage = st} to
 *     fs.write_atomic, csv writer:commit, csvedit.rewrite and csvedit.merge: the file is written
 *     and fsynced beside its target, and the status says what the commit will do.
 *     st:commit() -> {{path=, status=}, ...} | nil, message (which files are new, which old);
 *     st:abort() (also on <close> and __gc when not committed); st:files() -> the staged list
 *     st:detach() -> {{path=, tmp=, status=}, ...} hands the staged files over (a forked worker
 *     to its parent) and forgets them; st:adopt(list) -> true | nil, message takes them over
 *   fs.inject_failure{write = n, rename = m}: test hook; the nth staged file fails as a full
 *     disk does, the mth rename of a commit fails (docs/rules.md, All-or-nothing writes)
 *   fs.mkdir_p(path) -> true | nil, message
 *   fs.check_input(path) -> true | nil, message: only a regular file is read (infile.h) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>

#include "atomicfile.h"
#include "dirlock.h"
#include "infile.h"
#include "luabind.h"

#define LOCK "perfscript.fs.lock"

typedef struct lock_ud { int fd; } lock_ud;

static void say_waiting(const char *holder, void *ud) {
  const char *dir = ud;
  fprintf(stderr, "perfscript: %s is locked by another run (%s); waiting for it to finish...\n",
          dir, *holder ? holder : "unknown holder");
  fflush(stderr);
}

typedef struct recover_ctx { lua_State *L; int quiet, list; lua_Integer n; } recover_ctx;

static void on_recovered(const char *path, long pid, void *ud) {
  recover_ctx *c = ud;
  if (!c->quiet) {
    fprintf(stderr, "perfscript: removed %s, left by a write of process %ld that did not finish "
            "(killed or crashed)\n", path, pid);
    fflush(stderr);
  }
  lua_pushstring(c->L, path);
  lua_rawseti(c->L, c->list, ++c->n);
}

static int fs_lock(lua_State *L) {
  const char *dir = luaL_checkstring(L, 1);
  double timeout = -1;
  int wait = 1, quiet = 0;
  if (lua_type(L, 2) == LUA_TTABLE) {
    if (lua_getfield(L, 2, "wait") != LUA_TNIL) wait = lua_toboolean(L, -1);
    if (lua_getfield(L, 2, "timeout") != LUA_TNIL) timeout = luaL_checknumber(L, -1);
    if (lua_getfield(L, 2, "quiet") != LUA_TNIL) quiet = lua_toboolean(L, -1);
    lua_pop(L, 3);
  }
  lock_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
  u->fd = -1;
  luaL_setmetatable(L, LOCK);
  int lock = lua_gettop(L);
  char err[600];
  u->fd = ps_dirlock_acquire(dir, wait ? timeout : 0, quiet ? NULL : say_waiting, (void *)dir,
                             err, sizeof err);
  if (u->fd < 0) {
    return ps_fail(L, err);
  }
  lua_newtable(L);
  recover_ctx c = {L, quiet, lua_gettop(L), 0};
  ps_dirlock_recover(dir, on_recovered, &c);
  lua_setiuservalue(L, lock, 1);
  lua_settop(L, lock);
  return 1;
}

/* The temporary files removed when the lock was taken (paths). */
static int lock_recovered(lua_State *L) {
  luaL_checkudata(L, 1, LOCK);
  lua_getiuservalue(L, 1, 1);
  lua_newtable(L);
  lua_Integer n = lua_istable(L, -2) ? (lua_Integer)lua_rawlen(L, -2) : 0;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -2, i);
    lua_rawseti(L, -2, i);
  }
  return 1;
}

static int lock_release(lua_State *L) {
  lock_ud *u = luaL_checkudata(L, 1, LOCK);
  ps_dirlock_release(u->fd);
  u->fd = -1;
  return 0;
}

static int lock_tostring(lua_State *L) {
  lock_ud *u = luaL_checkudata(L, 1, LOCK);
  lua_pushstring(L, u->fd >= 0 ? "database lock (held)" : "database lock (released)");
  return 1;
}

/* Writes the pieces of t to fp and frees them (a written text is dropped: it may be big). */
static int write_text(ps_text *t, FILE *fp) {
  int rc = 0;
  for (size_t i = 0; i < t->n && rc == 0; i++)
    if (fwrite(t->p[i], 1, t->len[i], fp) != t->len[i]) rc = -1;
  int e = errno;
  ps_text_clear(t);
  errno = e;
  return rc;
}

static int fs_write_atomic(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t len = 0;
  /* text, or a function giving the text in pieces (each written and dropped before the next:
   * a big text need not exist whole) */
  int pieces = lua_isfunction(L, 2);
  ps_text *ctext = pieces ? NULL : ps_totext(L, 2);
  const char *text = pieces || ctext ? NULL : luaL_checklstring(L, 2, &len);
  int if_changed = 1, append = 0;
  if (lua_type(L, 3) == LUA_TTABLE) {
    if (lua_getfield(L, 3, "if_changed") != LUA_TNIL) if_changed = lua_toboolean(L, -1);
    if (lua_getfield(L, 3, "append") != LUA_TNIL) append = lua_toboolean(L, -1);
    lua_pop(L, 2);
  }
  ps_stage *stage = ps_optstage(L, 3);
  char err[600];
  if (stage == NULL && !append && !pieces && !ctext)
    return ps_push_write_result(L, ps_atomic_write(path, text, len, if_changed, err, sizeof err),
                                err);
  ps_atomic a;
  int last;
  if ((append ? ps_atomic_open_append(&a, path, &last, err, sizeof err)
              : ps_atomic_open(&a, path, err, sizeof err)) != 0)
    return ps_fail(L, err);
  for (;;) {
    if (pieces) {
      lua_settop(L, 3);
      lua_pushvalue(L, 2);
      if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
        ps_atomic_abort(&a);
        return lua_error(L);
      }
      if (lua_isnil(L, -1)) break;
      if ((ctext = ps_totext(L, -1)) == NULL && (text = lua_tolstring(L, -1, &len)) == NULL) {
        ps_atomic_abort(&a);
        return luaL_error(L, "write_atomic: the text function gave a %s, not a string",
                          luaL_typename(L, -1));
      }
    }
    if (ctext ? write_text(ctext, a.fp) != 0 : len > 0 && fwrite(text, 1, len, a.fp) != len) {
      snprintf(err, sizeof err, "%s: write failed: %s (the original is untouched)", path,
               strerror(errno));
      ps_atomic_abort(&a);
      return ps_fail(L, err);
    }
    if (!pieces) break;
  }
  a.stage = stage;
  return ps_push_write_result(L, ps_atomic_commit(&a, if_changed, err, sizeof err), err);
}

/* ---- stages ---------------------------------------------------------------------------- */

static int fs_stage(lua_State *L) {
  ps_stage *s = lua_newuserdatauv(L, sizeof *s, 0);
  ps_stage_init(s);
  luaL_setmetatable(L, PS_STAGE_CLASS);
  return 1;
}

static const char *status_name(int st) {
  return st == PS_ATOMIC_CREATED ? "created" : "replaced";
}

/* Pushes {{path=, status=}, ...} for entries [from, to). */
static void push_entries(lua_State *L, const ps_stage *s, size_t from, size_t to) {
  lua_createtable(L, (int)(to - from), 0);
  for (size_t i = from; i < to; i++) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, s->e[i].path);
    lua_setfield(L, -2, "path");
    lua_pushstring(L, status_name(s->e[i].status));
    lua_setfield(L, -2, "status");
    lua_rawseti(L, -2, (lua_Integer)(i - from + 1));
  }
}

/* "a, b, c" of the targets [from, to), or "none". */
static void add_names(luaL_Buffer *b, const ps_stage *s, size_t from, size_t to) {
  if (from == to) luaL_addstring(b, "none");
  for (size_t i = from; i < to; i++) {
    if (i > from) luaL_addstring(b, ", ");
    luaL_addstring(b, s->e[i].path);
  }
}

static int stage_commit(lua_State *L) {
  ps_stage *s = luaL_checkudata(L, 1, PS_STAGE_CLASS);
  if (s->state != 0) return luaL_error(L, "stage already committed or aborted");
  char err[600];
  if (ps_stage_commit(s, err, sizeof err) == 0) {
    push_entries(L, s, 0, s->n);
    return 1;
  }
  /* interrupted: say exactly which targets hold the new content and which the old */
  luaL_pushfail(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, err);
  lua_pushfstring(L, "; the commit stopped after %d of %d file(s): new content in ",
                  (int)s->done, (int)s->n);
  luaL_addvalue(&b);
  add_names(&b, s, 0, s->done);
  luaL_addstring(&b, "; old content still in ");
  add_names(&b, s, s->done, s->n);
  luaL_pushresult(&b);
  return 2;
}

static int stage_abort(lua_State *L) {
  ps_stage *s = luaL_checkudata(L, 1, PS_STAGE_CLASS);
  ps_stage_abort(s);
  return 0;
}

static int stage_gc(lua_State *L) {
  ps_stage *s = luaL_checkudata(L, 1, PS_STAGE_CLASS);
  ps_stage_free(s);
  return 0;
}

static int stage_files(lua_State *L) {
  ps_stage *s = luaL_checkudata(L, 1, PS_STAGE_CLASS);
  push_entries(L, s, 0, s->n);
  return 1;
}

/* st:detach() -> {{path=, tmp=, status=}, ...}: the staged files handed over (to st:adopt in
 * another process); this stage forgets them and stays open. */
static int stage_detach(lua_State *L) {
  ps_stage *s = luaL_checkudata(L, 1, PS_STAGE_CLASS);
  if (s->state != 0) return luaL_error(L, "stage already committed or aborted");
  push_entries(L, s, 0, s->n);
  for (size_t i = 0; i < s->n; i++) {
    lua_rawgeti(L, -1, (lua_Integer)i + 1);
    lua_pushstring(L, s->e[i].file.tmp);
    lua_setfield(L, -2, "tmp");
    lua_pop(L, 1);
  }
  ps_stage_detach(s);
  return 1;
}

/* Forgets the entries from n0 on (adopted by a call that failed); their files stay. */
static void unadopt(ps_stage *s, size_t n0) {
  while (s->n > n0) {
    s->n--;
    free(s->e[s->n].path);
    free(s->e[s->n].file.path);
    free(s->e[s->n].file.tmp);
  }
}

/* st:adopt(entries) -> true | nil, message: st:detach()'s list joins this stage (in order);
 * on a problem (a temporary file gone) none of them is adopted. */
static int stage_adopt(lua_State *L) {
  ps_stage *s = luaL_checkudata(L, 1, PS_STAGE_CLASS);
  luaL_checktype(L, 2, LUA_TTABLE);
  if (s->state != 0) return luaL_error(L, "stage already committed or aborted");
  size_t n0 = s->n, k = (size_t)lua_rawlen(L, 2);
  char err[600];
  for (size_t i = 1; i <= k; i++) {
    lua_rawgeti(L, 2, (lua_Integer)i);
    luaL_checktype(L, -1, LUA_TTABLE);
    lua_getfield(L, -1, "path");
    lua_getfield(L, -2, "tmp");
    lua_getfield(L, -3, "status");
    const char *path = lua_tostring(L, -3), *tmp = lua_tostring(L, -2), *st = lua_tostring(L, -1);
    if (path == NULL || tmp == NULL || st == NULL) {
      unadopt(s, n0);
      return luaL_error(L, "adopt: entry %d needs path, tmp and status strings", (int)i);
    }
    int status = strcmp(st, "created") == 0 ? PS_ATOMIC_CREATED :
                 strcmp(st, "replaced") == 0 ? PS_ATOMIC_REPLACED : 0;
    if (ps_stage_adopt(s, path, tmp, status, err, sizeof err) != 0) {
      unadopt(s, n0); /* none adopted */
      return ps_fail(L, err);
    }
    lua_pop(L, 4);
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int stage_tostring(lua_State *L) {
  ps_stage *s = luaL_checkudata(L, 1, PS_STAGE_CLASS);
  static const char *const states[] = {"open", "committed", "aborted", "commit interrupted"};
  lua_pushfstring(L, "stage (%d file(s), %s)", (int)s->n, states[s->state]);
  return 1;
}

static int fs_inject_failure(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "write");
  lua_getfield(L, 1, "rename");
  ps_stage_inject_failure((long)luaL_optinteger(L, -2, 0), (long)luaL_optinteger(L, -1, 0));
  return 0;
}

static int fs_check_input(lua_State *L) {
  char err[600];
  if (ps_input_check(luaL_checkstring(L, 1), err, sizeof err) != 0) return ps_fail(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

static int fs_mkdir_p(lua_State *L) {
  size_t len;
  const char *path = luaL_checklstring(L, 1, &len);
  luaL_Buffer b;
  char *p = luaL_buffinitsize(L, &b, len + 1);
  memcpy(p, path, len + 1);
  for (size_t i = 1; i <= len; i++) {
    if (p[i] == '/' || p[i] == '\0') {
      char c = p[i];
      p[i] = '\0';
      if (mkdir(p, 0777) != 0 && errno != EEXIST) {
        luaL_pushfail(L);
        lua_pushfstring(L, "%s: cannot create directory: %s", p, strerror(errno));
        return 2;
      }
      p[i] = c;
    }
  }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: exists and is not a directory", path);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

int luaopen_perfscript_fs(lua_State *L) {
  static const luaL_Reg lock_meta[] = {
    {"__gc", lock_release}, {"__close", lock_release}, {"__tostring", lock_tostring},
    {NULL, NULL}};
  static const luaL_Reg lock_methods[] = {
    {"release", lock_release}, {"recovered", lock_recovered}, {NULL, NULL}};
  static const luaL_Reg stage_meta[] = {
    {"__gc", stage_gc}, {"__close", stage_abort}, {"__tostring", stage_tostring},
    {NULL, NULL}};
  static const luaL_Reg stage_methods[] = {
    {"commit", stage_commit}, {"abort", stage_abort}, {"files", stage_files},
    {"detach", stage_detach}, {"adopt", stage_adopt}, {NULL, NULL}};
  static const luaL_Reg funcs[] = {
    {"lock", fs_lock}, {"write_atomic", fs_write_atomic}, {"mkdir_p", fs_mkdir_p},
    {"stage", fs_stage}, {"inject_failure", fs_inject_failure}, {"check_input", fs_check_input},
    {NULL, NULL}};
  ps_newclass(L, LOCK, lock_meta, lock_methods);
  ps_newclass(L, PS_STAGE_CLASS, stage_meta, stage_methods);
  luaL_newlib(L, funcs);
  return 1;
}
