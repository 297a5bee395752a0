#ifndef CONVOY_CSODIUM_SHIM_H
#define CONVOY_CSODIUM_SHIM_H
#include <sodium.h>
#endif
