#define _GNU_SOURCE
#include "CPlatform.h"

#include <fcntl.h>

int cplatform_no_access_time_flag(void) {
#ifdef O_NOATIME
    return O_NOATIME;
#else
    return 0;
#endif
}
