#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <curl/curl.h>

/*
 * curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, so Swift cannot call them.
 * Each wrapper below passes exactly one argument type; pick the one the option's documentation names.
 */

/* ---- curl_easy_setopt ---- */

/** Sets an option that takes a `long` (flags, counts, timeouts in milliseconds). */
static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

/** Sets an option that takes a `curl_off_t` (the `_LARGE` sizes). */
static inline CURLcode ccurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/** Sets an option that takes a C string (curl copies it, except CURLOPT_POSTFIELDS). */
static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/** Sets an option that takes an untyped pointer (user data for callbacks, the error buffer). */
static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

/** Sets an option that takes a string list (CURLOPT_HTTPHEADER); the list must outlive the transfer. */
static inline CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/** Sets CURLOPT_WRITEFUNCTION. */
static inline CURLcode ccurl_easy_setopt_write_callback(CURL *handle, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/** Sets CURLOPT_HEADERFUNCTION (same shape as the write callback, one header line per call). */
static inline CURLcode ccurl_easy_setopt_header_callback(CURL *handle, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/** Sets CURLOPT_READFUNCTION. */
static inline CURLcode ccurl_easy_setopt_read_callback(CURL *handle, CURLoption option, curl_read_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/** Sets CURLOPT_SEEKFUNCTION (lets curl rewind a request body to resend it). */
static inline CURLcode ccurl_easy_setopt_seek_callback(CURL *handle, CURLoption option, curl_seek_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/** Sets CURLOPT_XFERINFOFUNCTION. */
static inline CURLcode ccurl_easy_setopt_xferinfo_callback(CURL *handle, CURLoption option, curl_xferinfo_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/* ---- curl_easy_getinfo ---- */

/** Reads a `long` info (CURLINFO_RESPONSE_CODE, CURLINFO_NUM_CONNECTS). */
static inline CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

/** Reads a `curl_off_t` info (the `_T` sizes and times). */
static inline CURLcode ccurl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

/** Reads a `double` info. */
static inline CURLcode ccurl_easy_getinfo_double(CURL *handle, CURLINFO info, double *value) {
    return curl_easy_getinfo(handle, info, value);
}

/** Reads a string info (owned by curl; valid until the handle is reset or cleaned up). */
static inline CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

/* ---- curl_multi_setopt ---- */

/** Sets a multi option that takes a `long`. */
static inline CURLMcode ccurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

/* ---- macros Swift does not import as typed constants ---- */

/** CURL_GLOBAL_ALL, for curl_global_init. */
static const long CCURL_GLOBAL_ALL = CURL_GLOBAL_ALL;
/** CURL_WRITEFUNC_PAUSE: a write callback returns it to pause receiving without consuming the data. */
static const size_t CCURL_WRITEFUNC_PAUSE = CURL_WRITEFUNC_PAUSE;
/** CURL_READFUNC_ABORT: a read callback returns it to abort the transfer. */
static const size_t CCURL_READFUNC_ABORT = CURL_READFUNC_ABORT;
/** CURLPAUSE_CONT, for curl_easy_pause: resume both directions. */
static const int CCURL_PAUSE_CONT = CURLPAUSE_CONT;
/** CURL_SEEKFUNC_OK and CURL_SEEKFUNC_CANTSEEK, for the seek callback. */
static const int CCURL_SEEKFUNC_OK = CURL_SEEKFUNC_OK;
/** See CCURL_SEEKFUNC_OK. */
static const int CCURL_SEEKFUNC_CANTSEEK = CURL_SEEKFUNC_CANTSEEK;
/** CURL_ERROR_SIZE: the size of the buffer CURLOPT_ERRORBUFFER writes to. */
static const size_t CCURL_ERROR_SIZE = CURL_ERROR_SIZE;

#endif
