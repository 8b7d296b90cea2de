// Declarations only (include/CNGHTTP2.h); the functions are libnghttp2.so.14's.
#include "CNGHTTP2.h"
