#pragma once
// `tessera ctl`: the client of tesserad's control socket (each takes --socket PATH).
//   tessera ctl list [--json]                  tenants, assignments, activity, the policy
//   tessera ctl set TENANT [--class C] [--priority N] [--tpot-slo 50ms] [--ttft-slo 500ms]
//   tessera ctl policy NAME                    switch the remap policy
//   tessera ctl drain | undrain                refuse / accept new tenants
//   tessera ctl grant --claim UID --tenant NAME --device N [the settings set takes]
//                                              reserve a tenant name for a claim
//   tessera ctl revoke --claim UID             drop a claim's grant

#include <CLI/CLI.hpp>
#include <string>

#include "tessera/cli/command.hpp"

namespace tessera::cli {

struct CtlFlags {
  CLI::App* command = nullptr;
  std::string socket;
  CLI::App* list = nullptr;
  bool json = false;
  CLI::App* set = nullptr;
  std::string tenant;  // set's and grant's
  std::string tenant_class;
  std::string priority;
  std::string tpot_slo;
  std::string ttft_slo;
  std::string sm_share;      // a fraction in [0, 1]
  std::string memory_limit;  // bytes or a Kubernetes quantity; "none": remove the daemon's
  CLI::App* policy = nullptr;
  std::string policy_name;
  CLI::App* drain = nullptr;
  CLI::App* undrain = nullptr;
  CLI::App* grant = nullptr;
  std::string claim;  // grant's and revoke's
  int device = 0;
  CLI::App* revoke = nullptr;
};

void add_ctl_options(CLI::App& command, CtlFlags& flags);
Outcome run_ctl_command(const CtlFlags& flags);

}  // namespace tessera::cli
