/* xpiler SIMT emulator stand-in for <cuda.h>: everything lives in xp_simt.h */
#include "../xp_simt.h"
