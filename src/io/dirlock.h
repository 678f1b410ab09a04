/* An exclusive lock on a database directory (flock on DIR/.perfscript.lock), so that two runs
 * that write the same database take turns instead of losing each other's updates. The lock
 * dies with the process, so a crash never leaves a stale lock behind. */
#ifndef PS_DIRLOCK_H
#define PS_DIRLOCK_H

#include <stddef.h>

#define PS_LOCK_FILE ".perfscript.lock"

/* Takes the lock. wait_seconds < 0 waits forever, 0 does not wait. When the lock is busy and
 * on_wait is given, it is called once with the holder's description before waiting.
 * Returns a descriptor (>= 0) or -1 with a message in err. */
int ps_dirlock_acquire(const char *dir, double wait_seconds,
                       void (*on_wait)(const char *holder, void *ud), void *ud,
                       char *err, size_t errsize);

void ps_dirlock_release(int fd);

/* Call with the lock held: removes the temporary files that atomic writes (atomicfile.h) of
 * processes that no longer exist left in dir (a write killed mid-way), calling on_removed for
 * each. Files of live processes and every other file are left alone. Returns the count. */
int ps_dirlock_recover(const char *dir, void (*on_removed)(const char *path, long pid, void *ud),
                       void *ud);

#endif
