#include "CPlatform.h"
#include <errno.h>

#if defined(__APPLE__)
#include <stdlib.h>

int cplatform_random_bytes(void *bytes, size_t count) {
    arc4random_buf(bytes, count);
    return 0;
}
#else
#include <sys/random.h>

int cplatform_random_bytes(void *bytes, size_t count) {
    size_t filled = 0;
    while (filled < count) {
        ssize_t got = getrandom((char *)bytes + filled, count - filled, 0);
        if (got > 0) {
            filled += (size_t)got;
        } else if (got < 0 && errno != EINTR) {
            return -1;
        }
    }
    return 0;
}
#endif
