/* What the first bytes of a data file say before any CSV is read: a UTF-8 BOM to skip, a UTF-16
 * export, or a Git LFS pointer standing in for the data (a repository cloned without
 * `git lfs pull`). The one home of these checks: the CSV engine (csvscan.c) and Lua
 * (perfscript.csv.is_lfs_pointer) both use it. */
#ifndef PS_CSVSNIFF_H
#define PS_CSVSNIFF_H

#include <stddef.h>

#define PS_LFS_MAGIC "version https://git-lfs.github.com/spec/"

/* 1 when data (the start of a file, a UTF-8 BOM allowed) is a Git LFS pointer. */
int ps_is_lfs_pointer(const char *data, size_t len);

/* 1 when the file at path is a Git LFS pointer, 0 when it is not or cannot be read. */
int ps_file_is_lfs_pointer(const char *path);

/* Checks the first len bytes of a CSV file: NULL when they may start CSV data (*skip set to 3
 * after a UTF-8 BOM, else 0), or the reason they cannot ("a Git LFS pointer, ..."). */
const char *ps_csv_bad_start(const char *data, size_t len, size_t *skip);

#endif
