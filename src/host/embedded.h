/* The Lua library compiled into the binary as text (see cmake/embed_lua.cmake). */
#ifndef PS_EMBEDDED_H
#define PS_EMBEDDED_H

#include <stddef.h>

typedef struct ps_embedded_file {
  const char *module;   /* "perfscript.csvutil" */
  const char *path;     /* "lua/perfscript/csvutil.lua", used as the chunk name */
  const char *source;
  size_t size;
} ps_embedded_file;

extern const ps_embedded_file ps_embedded_files[];

#endif
