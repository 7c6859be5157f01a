#ifndef CCIVETWEB_SHIM_H
#define CCIVETWEB_SHIM_H
#include <civetweb.h>
#endif
