/* xpiler SIMT emulator stand-in for <device_launch_parameters.h>: everything lives in xp_simt.h */
#include "../xp_simt.h"
