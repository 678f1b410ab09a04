/* Opening an input file: the one opener every reader uses (the CSV engine, the trace reader,
 * the sniffers). Only a regular file is opened: a FIFO would block the run forever (and a fed
 * one be read as a stream of unknown size), a device or a socket is no export. A directory is
 * said as such; callers that take directories walk them first (docs/rules.md, Input files). */
#ifndef PS_INFILE_H
#define PS_INFILE_H

#include <stddef.h>
#include <stdio.h>

/* An O_RDONLY | O_CLOEXEC descriptor of path, or -1 with "path: reason" in err. The kind is
 * checked before the open (stat) and again on what was opened (fstat; the open itself does
 * not block, O_NONBLOCK), so a file swapped in between is refused too. */
int ps_input_open(const char *path, char *err, size_t errsize);

/* 0 when path is a regular file (links followed); -1 with the reason otherwise. */
int ps_input_check(const char *path, char *err, size_t errsize);

/* The same as a stdio stream ("rb"). */
FILE *ps_input_fopen(const char *path, char *err, size_t errsize);

/* "a named pipe (FIFO)", "a directory", ... for a st_mode that is not a regular file; NULL for
 * a regular file. */
const char *ps_input_kind(unsigned mode);

#endif
