/* xpiler SIMT emulator stand-in for <vector_types.h>: everything lives in xp_simt.h */
#include "../xp_simt.h"
