/* xpiler SIMT emulator stand-in for <cuda_fp16.hpp>: everything lives in xp_simt.h */
#include "../xp_simt.h"
