/* xpiler: HIP on NVIDIA through hip_on_cuda.h */
#include "../../hip_on_cuda.h"
