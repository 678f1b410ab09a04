/* Staged writes: several files replaced together (docs/rules.md, All-or-nothing writes).
 * Each file is written completely first (a temporary file beside its target, fsynced, as
 * atomicfile.h does), and only when every file of the run is staged are they renamed into
 * place, one after the other. An error before the commit (a bad rule, a full disk, a file
 * marked read-only) leaves every target untouched; an error during the commit (a rename
 * failing) leaves the first `done` targets new and the others old, and says which. */
#ifndef PS_STAGE_H
#define PS_STAGE_H

#include <stddef.h>

#include "atomicfile.h"

typedef struct ps_stage_entry {
  ps_atomic file;   /* finished: fp closed, tmp holds the new content */
  char *path;       /* the target (kept after the commit, for the report) */
  int status;       /* PS_ATOMIC_CREATED or PS_ATOMIC_REPLACED */
  long q;           /* its place in the syncer's queue, -1 when not queued */
} ps_stage_entry;

struct ps_stage_syncer;

typedef struct ps_stage {
  ps_stage_entry *e;
  size_t n, cap;
  size_t done;      /* renamed by ps_stage_commit */
  int state;        /* 0 open, 1 committed, 2 aborted, 3 commit interrupted */
  /* a thread that fsyncs each staged file while the run makes the next ones (the disk's
   * flush of a big import's 33 MB was a sixth of its wall time when left to the commit);
   * NULL until the first file is staged, or when no thread could start */
  struct ps_stage_syncer *sync;
} ps_stage;

void ps_stage_init(ps_stage *s);

/* Finishes a (ps_atomic_finish) and keeps it for the commit; a is emptied either way.
 * Returns PS_ATOMIC_UNCHANGED (nothing to rename), PS_ATOMIC_CREATED/REPLACED (what the commit
 * will do), or -1 with a message (a's temporary file is removed; the stage is unharmed). */
int ps_stage_add(ps_stage *s, ps_atomic *a, int if_changed, char *err, size_t errsize);

/* Makes every staged file durable (those the syncer has not fsynced yet, several at once;
 * a failed fsync of the syncer's is this error too), renames them in the order staged, then
 * fsyncs their directories. 0 on
 * success; -1 with the failing rename's cause in err, s->done the files already renamed
 * (e[0 .. done-1] are new, e[done ..] old: their temporary files are removed). */
int ps_stage_commit(ps_stage *s, char *err, size_t errsize);

/* Removes the temporary files not yet renamed. Safe to call twice. */
void ps_stage_abort(ps_stage *s);

/* ps_stage_abort, then frees the entries. */
void ps_stage_free(ps_stage *s);

/* Hands the staged files to another process's stage (a forked worker's to its parent's):
 * drops the entries, their temporary files kept; the stage stays open and empty. The caller
 * has copied path, file.tmp and status first. */
void ps_stage_detach(ps_stage *s);

/* Takes over a temporary file staged elsewhere (ps_stage_detach): the commit renames tmp over
 * path (status: PS_ATOMIC_CREATED or REPLACED), an abort removes it. tmp must be a temporary
 * file of path's (atomicfile.h's name, in path's directory) that exists. 0, or -1 with a
 * message (the stage is unchanged; tmp is left alone). */
int ps_stage_adopt(ps_stage *s, const char *path, const char *tmp, int status, char *err,
                   size_t errsize);

/* Test hook (documented in docs/rules.md): from now on, make the nth file staged fail as a
 * full disk does (ENOSPC), and the mth rename of a commit fail (EIO); 0 turns either off. */
void ps_stage_inject_failure(long nth_write, long mth_rename);

#endif
