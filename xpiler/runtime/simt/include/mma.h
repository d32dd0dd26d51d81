/* xpiler SIMT emulator stand-in for <mma.h>: everything lives in xp_simt.h */
#include "../xp_simt.h"
