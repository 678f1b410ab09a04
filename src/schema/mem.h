/* Memory estimate of shape-grid rows (docs/rules.md, Shape grids: the memory filter), with the
 * Python original's slot shift fixed: every slot is sized with its own dtype. Element sizes and
 * tensor bytes come from shape.h (ps_dtype_bytes, ps_shape_nbytes); this adds the row sum and
 * the human-readable figure. */
#ifndef PS_MEM_H
#define PS_MEM_H

#include <stddef.h>
#include <stdint.h>

/* Saturating sum. */
uint64_t ps_mem_add(uint64_t a, uint64_t b);

/* "500 B", "2.00 KiB", "1.02 MiB", "3.00 GiB" (binary units, two decimals). */
void ps_mem_format(uint64_t n, char *buf, size_t size);

#endif
