#ifndef CONVOY_CGPS_SHIM_H
#define CONVOY_CGPS_SHIM_H
#include <gps.h>
#include <string.h>

/* The API version libgps was built with; gpsd's JSON protocol differs across
   major versions, so Convoy reports it in `convoy --version`. */
static inline int convoy_gps_api_major(void) { return GPSD_API_MAJOR_VERSION; }
static inline int convoy_gps_api_minor(void) { return GPSD_API_MINOR_VERSION; }

/* gps_send is variadic, so Swift cannot call it: watch every device, as JSON. */
static inline int convoy_gps_watch(struct gps_data_t *g) {
    return gps_stream(g, WATCH_ENABLE | WATCH_JSON, NULL);
}
static inline int convoy_gps_unwatch(struct gps_data_t *g) {
    return gps_stream(g, WATCH_DISABLE, NULL);
}

/* Clear the "set since last read" mask; call before each gps_read. */
static inline void convoy_gps_clear_set(struct gps_data_t *g) { g->set = 0; }
/* The last message was a TPV (only TPV sets the fix mode). */
static inline int convoy_gps_read_tpv(const struct gps_data_t *g) { return (g->set & MODE_SET) != 0; }
/* The last message was a SKY (satellites, DOPs). */
static inline int convoy_gps_read_sky(const struct gps_data_t *g) { return (g->set & SATELLITE_SET) != 0; }

/* C char arrays that Swift would see as tuples. */
static inline const char *convoy_gps_device_path(const struct gps_data_t *g) { return g->dev.path; }
#endif
