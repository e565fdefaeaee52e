#pragma once
// What the cuInit wrapper did (init_hook.cpp), for the summary.

namespace tessera::interpose {

// The CUDA_MPS_ACTIVE_THREAD_PERCENTAGE in force when CUDA started in the process, as the
// wrapper left it (the daemon's, or a lower one the environment already had); 0 when the
// variable was not set.
int mps_percentage_at_start();

}  // namespace tessera::interpose
