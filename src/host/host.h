/* The perfscript host: one Lua state with the perfscript libraries, run as Lua's own lua.c
 * runs its interpreter (protected calls, a traceback handler, Ctrl-C through a hook). */
#ifndef PS_HOST_H
#define PS_HOST_H

#include <lua.h>

#define PS_PROGNAME "perfscript"

/* Opens the standard libraries, preloads lfs, cjson and the perfscript C modules, and installs
 * the searcher for the embedded Lua library (or a live tree named by PERFSCRIPT_LUA_DIR). */
void ps_host_open(lua_State *L);

/* Message handler for lua_pcall: adds a traceback unless the error is a user error. */
int ps_msghandler(lua_State *L);

/* Calls the function under narg arguments with the message handler; Ctrl-C interrupts it. */
int ps_docall(lua_State *L, int narg, int nres);

/* Prints the error on top of the stack (if status is not OK) as "perfscript: msg". */
int ps_report(lua_State *L, int status);

void ps_message(const char *progname, const char *msg);

/* The read-eval-print loop (readline on a terminal, plain lines otherwise). */
void ps_repl(lua_State *L);

/* Directory of the live Lua tree, or NULL for the embedded one. */
extern const char *ps_lua_dir;

#endif
