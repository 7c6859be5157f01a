#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <curl/curl.h>
/* Typed wrappers for the variadic curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt go here. */
#endif
