#pragma once
// tessera list: what is built in (GPUs, models, sharing modes, experiments), from the catalogs and
// registries themselves.

#include <CLI/CLI.hpp>

#include "tessera/cli/command.hpp"

namespace tessera::cli {

struct ListFlags {
  CLI::App* command = nullptr;
};

void add_list_options(CLI::App& command, ListFlags& flags);
Outcome run_list_command(const ListFlags& flags);

}  // namespace tessera::cli
