/* xpiler SIMT emulator stand-in for <math_constants.h> */
#include "../xp_simt.h"
#ifndef XPS_MATH_CONSTANTS
#define XPS_MATH_CONSTANTS
#define CUDART_INF_F __int_as_float(0x7f800000)
#define CUDART_NAN_F __int_as_float(0x7fffffff)
#define CUDART_PI_F 3.141592654f
#define CUDART_SQRT_HALF_F 0.707106781f
#define CUDART_INF __longlong_as_double(0x7ff0000000000000ULL)
#define CUDART_PI 3.1415926535897931e+0
#endif
