#pragma once
// The process's memory ledger, limited by TESSERA_MEMORY_LIMIT (config.hpp), shared by the memory
// wrappers and the summary.

#include "memory_ledger.hpp"

namespace tessera::interpose {

MemoryLedger& memory_ledger();

}  // namespace tessera::interpose
