#ifndef CONVOY_CCURL_SHIM_H
#define CONVOY_CCURL_SHIM_H
#include <curl/curl.h>

/* Swift cannot call variadic functions (curl_easy_setopt, curl_easy_getinfo)
   nor see macros that alias enum values (CURLVERSION_NOW); typed helpers here. */
static inline CURLcode convoy_curl_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }
static inline const curl_version_info_data *convoy_curl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }
#endif
