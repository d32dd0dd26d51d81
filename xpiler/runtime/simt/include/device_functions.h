/* xpiler SIMT emulator stand-in for <device_functions.h>: everything lives in xp_simt.h */
#include "../xp_simt.h"
