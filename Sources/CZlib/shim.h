#ifndef CONVOY_CZLIB_SHIM_H
#define CONVOY_CZLIB_SHIM_H
#include <zlib.h>

/* deflateInit2 and inflateInit2 are macros; Swift sees these functions instead. */
static inline int convoy_deflate_init2(z_streamp strm, int level, int windowBits) {
    return deflateInit2(strm, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}
static inline int convoy_inflate_init2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
#endif
