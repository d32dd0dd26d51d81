/* xpiler SIMT emulator: reduce() lives in cooperative_groups.h */
#include "../cooperative_groups.h"
