// Declarations only (include/CNGHTTP2.h); the functions are libnghttp2.so.14's. SessionMemory.c is ours.
#include "CNGHTTP2.h"
