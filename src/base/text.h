/* Whitespace of CSV cells, shared by the core modules: Python's str.strip() set for ASCII
 * (space, \t \n \v \f \r). */
#ifndef PS_TEXT_H
#define PS_TEXT_H

#include <stddef.h>

static inline int ps_is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Trims *s (len bytes) in place: moves *s past leading and shortens *len by trailing spaces. */
static inline void ps_trim(const char **s, size_t *len) {
  while (*len && ps_is_space(**s)) (*s)++, (*len)--;
  while (*len && ps_is_space((*s)[*len - 1])) (*len)--;
}

#endif
