// Placeholder: filled by the helper that owns it (issue 6).
#include "tessera/cuda/kernel_params.h"
