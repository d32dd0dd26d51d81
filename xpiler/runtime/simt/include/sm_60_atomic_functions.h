/* xpiler SIMT emulator stand-in for <sm_60_atomic_functions.h>: everything lives in xp_simt.h */
#include "../xp_simt.h"
