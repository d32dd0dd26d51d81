/* xpiler SIMT emulator stand-in for <cuda_bf16.h>: everything lives in xp_simt.h */
#include "../xp_simt.h"
