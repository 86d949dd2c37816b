#include "CPlatform.h"

#if defined(__GLIBC__)
#include <malloc.h>
int cplatform_release_free_memory(void) { return malloc_trim(0); }
#else
int cplatform_release_free_memory(void) { return 0; }
#endif
