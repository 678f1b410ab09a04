/* See lifetime.h. */
#include "lifetime.h"

#include <stdatomic.h>

static atomic_int exiting;

void ps_set_exiting(void) { atomic_store(&exiting, 1); }

int ps_exiting(void) {
#if defined(__SANITIZE_ADDRESS__)
  return 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return 0;
#else
  return atomic_load(&exiting);
#endif
#else
  return atomic_load(&exiting);
#endif
}
