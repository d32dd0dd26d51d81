/* cnrt.h: part of xpiler's BANG emulator; everything lives in ../xp_bang.h */
#include "../xp_bang.h"
