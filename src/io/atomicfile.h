/* Atomic replacement of a file: write a temporary file in the same directory, fsync it and
 * rename it over the target, so that the target is either the old or the new content, never
 * a mix, whatever happens. On any failure the temporary file is removed. */
#ifndef PS_ATOMICFILE_H
#define PS_ATOMICFILE_H

#include <stdio.h>

typedef struct ps_atomic {
  FILE *fp;        /* write the new content here */
  char *path;      /* the target */
  char *tmp;       /* the temporary file */
} ps_atomic;

enum { PS_ATOMIC_CREATED = 1, PS_ATOMIC_REPLACED = 2, PS_ATOMIC_UNCHANGED = 3 };

/* 0 on success; -1 with a message in err. */
int ps_atomic_open(ps_atomic *a, const char *path, char *err, size_t errsize);

/* Flushes, fsyncs and renames. With if_changed set, a target whose bytes equal the new
 * content is left alone (not even its modification time changes). Returns one of
 * PS_ATOMIC_CREATED/REPLACED/UNCHANGED, or -1 with a message (the target is untouched). */
int ps_atomic_commit(ps_atomic *a, int if_changed, char *err, size_t errsize);

/* Drops the new content; the target is untouched. Safe to call twice. */
void ps_atomic_abort(ps_atomic *a);

/* The temporary file is DIR/.<name>.tmp.<pid>.XXXXXX (pid: the writer's process). For a
 * directory entry name, returns that pid when the name has this form, else 0. */
long ps_atomic_tmp_owner(const char *name);

/* Whole-buffer convenience. */
int ps_atomic_write(const char *path, const void *data, size_t len, int if_changed,
                    char *err, size_t errsize);

#endif
