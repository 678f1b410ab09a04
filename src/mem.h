/* Tensor memory estimation for shape-grid rows (grid_generator spec section 5, with the
 * original's slot shift fixed: every slot is sized with its own dtype). */
#ifndef PS_MEM_H
#define PS_MEM_H

#include <stddef.h>
#include <stdint.h>

/* Bytes per element of a dtype name (case-insensitive, surrounding whitespace ignored);
 * unknown names and the empty name count as 2 bytes (FP16). */
int ps_mem_dtype_bytes(const char *name, size_t len);

/* Product of the dims times elem_bytes, saturating at UINT64_MAX. An empty shape (n == 0)
 * and any zero or negative dimension give 0. */
uint64_t ps_mem_tensor_bytes(const int64_t *dims, size_t n, int elem_bytes);

/* Saturating sum. */
uint64_t ps_mem_add(uint64_t a, uint64_t b);

/* "500 B", "2.00 KiB", "1.02 MiB", "3.00 GiB" (binary units, two decimals). */
void ps_mem_format(uint64_t n, char *buf, size_t size);

#endif
