/* The shape grid's view of an existing database row, in C (perfscript.gridscan): the compute
 * lookup key perfscript.db.reach's answer set files a row under (Reach.view in compute mode,
 * then key_of: "shapes|dtypes|ep"), for rows whose cells are in the plain form a database
 * holds. Rows in any other form are left to the Lua path, so the key is the Lua one exactly. */
#ifndef PS_GRIDSCAN_H
#define PS_GRIDSCAN_H

#include <stddef.h>

/* The compute key of a row from its Input Shapes, Input Data Types, Input Formats and EP Size
 * cells (NULL: the row has no such cell), keeping the first n shape slots (n < 0: all).
 * Each cell is first stripped of whitespace and '"' at both ends, as the Lua path does (a
 * database writes its shape cells quoted). Plain form: the shape cell then only digits, ',',
 * ';' and "()" slots (each slot empty, "()" or integers of at most 18 digits joined by single
 * commas); the other cells without whitespace or '"' inside. Returns the key's length (written to out, NUL-terminated), or -1 when the row is
 * not in the plain form or the key does not fit in cap (the caller then uses the Lua path). */
long ps_gridscan_compute_key(const char *is, const char *idt, const char *ifm, const char *ep, int n,
                             char *out, size_t cap);

#endif
