/* xpiler SIMT emulator stand-in for <hip/amd_detail/amd_hip_runtime.h>: everything lives in xp_simt.h */
#include "../../../xp_simt.h"
