#pragma once
// The process's memory ledger, limited by TESSERA_MEMORY_LIMIT (config.hpp), shared by the memory
// wrappers and the summary.

#include "memory_ledger.hpp"

namespace tessera::interpose {

MemoryLedger& memory_ledger();
// Writes the ledger's totals to the daemon's page, if this process registered with a daemon (its
// metrics report them); after every allocation and free, and at registration.
void publish_memory();

}  // namespace tessera::interpose
