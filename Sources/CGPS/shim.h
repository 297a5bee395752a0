#ifndef CONVOY_CGPS_SHIM_H
#define CONVOY_CGPS_SHIM_H
#include <gps.h>

/* The API version libgps was built with; gpsd's JSON protocol differs across
   major versions, so Convoy reports it in `convoy --version`. */
static inline int convoy_gps_api_major(void) { return GPSD_API_MAJOR_VERSION; }
static inline int convoy_gps_api_minor(void) { return GPSD_API_MINOR_VERSION; }
#endif
