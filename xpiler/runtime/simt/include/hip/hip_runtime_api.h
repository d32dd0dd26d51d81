/* xpiler SIMT emulator stand-in for <hip/hip_runtime_api.h>: everything lives in xp_simt.h */
#include "../../xp_simt.h"
