#ifndef CONVOY_CCURL_SHIM_H
#define CONVOY_CCURL_SHIM_H
#include <curl/curl.h>

/* Swift cannot call variadic functions (curl_easy_setopt, curl_easy_getinfo,
   curl_multi_setopt, curl_share_setopt) nor see macros that alias enum values
   (CURLVERSION_NOW); typed helpers here. */
static inline CURLcode convoy_curl_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }
static inline const curl_version_info_data *convoy_curl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }

static inline CURLcode convoy_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode convoy_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode convoy_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode convoy_easy_setopt_write(CURL *h, CURLoption o, curl_write_callback f) { return curl_easy_setopt(h, o, f); }
static inline CURLcode convoy_easy_setopt_xferinfo(CURL *h, curl_xferinfo_callback f) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f); }

static inline CURLcode convoy_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode convoy_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode convoy_easy_getinfo_ptr(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }

static inline CURLMcode convoy_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLSHcode convoy_share_setopt_long(CURLSH *s, CURLSHoption o, long v) { return curl_share_setopt(s, o, v); }

/* CURLMsg's union, read in C. */
static inline CURLcode convoy_msg_result(const CURLMsg *m) { return m->data.result; }
#endif
