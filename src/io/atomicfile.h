/* Atomic replacement of a file: write a temporary file in the same directory, fsync it and
 * rename it over the target, so that the target is either the old or the new content, never
 * a mix, whatever happens. On any failure the temporary file is removed. */
#ifndef PS_ATOMICFILE_H
#define PS_ATOMICFILE_H

#include <stdio.h>

struct ps_stage;

typedef struct ps_atomic {
  FILE *fp;        /* write the new content here */
  char *path;      /* the target */
  char *tmp;       /* the temporary file */
  struct ps_stage *stage; /* set before commit: the commit only stages (stage.h) */
  int pending;     /* after ps_atomic_finish: PS_ATOMIC_CREATED or PS_ATOMIC_REPLACED */
} ps_atomic;

enum { PS_ATOMIC_CREATED = 1, PS_ATOMIC_REPLACED = 2, PS_ATOMIC_UNCHANGED = 3 };

/* 0 on success; -1 with a message in err. */
int ps_atomic_open(ps_atomic *a, const char *path, char *err, size_t errsize);

/* Append mode: like ps_atomic_open, with the temporary file starting as a copy of the
 * target's current bytes (none when it does not exist), the stream at its end. The copy is a
 * reflink (FICLONE) where the filesystem shares blocks, else copy_file_range, else read and
 * write: the old bytes never pass through the caller. *last gets the last old byte (-1 when
 * there is none), for a caller that must end an unterminated line first. The target is
 * untouched until the commit, as with ps_atomic_open. */
int ps_atomic_open_append(ps_atomic *a, const char *path, int *last, char *err, size_t errsize);

/* Flushes, fsyncs and renames. With if_changed set, a target whose bytes equal the new
 * content is left alone (not even its modification time changes). A target marked read-only
 * (no write permission bit) is refused. Returns one of PS_ATOMIC_CREATED/REPLACED/UNCHANGED,
 * or -1 with a message (the target is untouched). With a->stage set, the rename is left to
 * ps_stage_commit and the return value says what it will do. */
int ps_atomic_commit(ps_atomic *a, int if_changed, char *err, size_t errsize);

/* The two halves of a commit. finish: flush, fsync and close the temporary file, compare
 * (if_changed), check the target's permission; returns PS_ATOMIC_UNCHANGED (the temporary
 * file is gone), PS_ATOMIC_CREATED/REPLACED (the rename to come, kept in a->pending), or -1.
 * publish: the rename and the directory fsync; returns a->pending or -1 (target untouched,
 * temporary file removed). */
int ps_atomic_finish(ps_atomic *a, int if_changed, char *err, size_t errsize);
int ps_atomic_publish(ps_atomic *a, char *err, size_t errsize);

/* The halves for a caller that makes many files durable at once (stage.c): finish without
 * the fsync (the caller fsyncs a->tmp before the rename), and the rename without the
 * directory's fsync (the caller calls ps_atomic_sync_dir on the target's directory after). */
int ps_atomic_finish_unsynced(ps_atomic *a, int if_changed, char *err, size_t errsize);
int ps_atomic_rename(ps_atomic *a, char *err, size_t errsize);
/* fsyncs the directory that holds path (errors ignored, as after every rename). */
void ps_atomic_sync_dir(const char *path);

/* 0 when the target may be replaced; -1 with a message when it is marked read-only. */
int ps_atomic_check_writable(const char *path, char *err, size_t errsize);

/* Drops the new content; the target is untouched. Safe to call twice. */
void ps_atomic_abort(ps_atomic *a);

/* The temporary file is DIR/.<name>.tmp.<pid>.XXXXXX (pid: the writer's process). For a
 * directory entry name, returns that pid when the name has this form, else 0. */
long ps_atomic_tmp_owner(const char *name);

/* Whole-buffer convenience. */
int ps_atomic_write(const char *path, const void *data, size_t len, int if_changed,
                    char *err, size_t errsize);

#endif
