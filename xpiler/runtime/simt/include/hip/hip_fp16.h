/* xpiler SIMT emulator stand-in for <hip/hip_fp16.h>: everything lives in xp_simt.h */
#include "../../xp_simt.h"
