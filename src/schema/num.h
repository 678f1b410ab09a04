/* Numbers in CSV cells: the one parser and the one "valid duration" rule of the project.
 * Cells follow Python's float() (the profilers' and the consumer's reader): surrounding
 * whitespace, a sign, digits with single underscores between them, a fraction, an exponent,
 * and nan / inf / infinity in any case; no hex. See docs in src/num.c. */
#ifndef PS_NUM_H
#define PS_NUM_H

#include <stddef.h>
#include <stdint.h>

/* Python float(s[0..len)). Returns 0 and sets *out, or -1 when the text is not a number. */
int ps_num_parse(const char *s, size_t len, double *out);

/* As ps_num_parse, but nan and +-inf are refused too (the profile parsers' cells). */
int ps_num_finite(const char *s, size_t len, double *out);

/* ps_num_finite of n <= 32 cells: bit i of the result is set when cells s[i] (len[i] bytes)
 * is a finite number, its value then in out[i]. A row's counters at once: faster than n
 * calls, the common short decimals' divisions run side by side. padded: the caller vouches
 * that 8 bytes can be read at each s[i] whatever its length (the CSV engine's fields, in a
 * padded buffer: csvscan.h), so a short cell is read in one load. */
uint32_t ps_num_finite_n(const char *const *s, const size_t *len, int n, int padded, double *out);

/* Tests only: 1 makes ps_num_finite_n take the portable path, 2 the SSSE3 one (where the CPU
 * has it), 0 the best the CPU has (AVX2 or SSSE3); all must give the same bits. */
void ps_num_set_portable(int on);

/* The write-back's parse_float: the number, or 0.0 when empty or not a number. */
double ps_num_or_zero(const char *s, size_t len);

/* Python int(s[0..len)) in base 10 (integer cells: EP Size, num_devices, ...): surrounding
 * whitespace, a sign, digits with single underscores between them; no fraction, exponent or
 * hex. Returns 0 and sets *out, or -1 when the text is not such an integer or leaves int64. */
int ps_num_int(const char *s, size_t len, int64_t *out);

/* A valid duration, as the database's consumer reads one: a finite number > 0. */
int ps_num_is_duration(double v);

/* ps_num_is_duration of a cell's number (empty and unparsable cells are not). */
int ps_num_duration_cell(const char *s, size_t len);

/* Formats v exactly as snprintf("%.6f") does, faster (the writers' 6 decimals); returns the
 * length like snprintf. */
int ps_num_fmt6(char *out, size_t cap, double v);

/* Room for ps_num_fmt6's text of any double (sign, 309 digits, point, 6 decimals) and a NUL. */
#define PS_NUM_FMT6_MAX 320

/* A row's numbers as CSV cells: each of v[0..n) as ',' and ps_num_fmt6's text, a NaN as ','
 * alone (an empty cell), at out, which has room for n * (PS_NUM_FMT6_MAX + 1) bytes (no NUL
 * written); returns the bytes written. One call, not a call a number. */
size_t ps_num_fmt6_cells(char *out, const double *v, int n);

/* Parses a decimal number of microseconds into nanoseconds exactly (digits beyond the ns are
 * rounded half up). Returns 0, or -1 when s is not such a number. */
int ps_num_us_to_ns(const char *s, size_t len, int64_t *ns);

#endif
