// libFuzzer target for tesserad's control protocol: arbitrary bytes are split into lines, each
// parsed as a request (parse_request) and, when it parses, applied to a tenant table on two
// simulated H100s as the server would (register with a page of its own, set, policy, drain is the
// server's alone), with a policy round after each line at a clock that moves 1 ms per line. A
// line beginning with '+' is a launch by the tenant registered last, one beginning with '*' a
// timed step of it lasting as many milliseconds as the line is long (priority-fill follows them:
// the table runs with slo_guided). Nothing may crash or throw;
// after every round each device's SM ranges lie within its usable SMs and are disjoint under the
// remap policies; under priority-fill each is the reserve at the top of the usable SMs, at the
// least stream priority.
//
// Build (clang 19+: clang 14 cannot compile libstdc++'s std::expected):
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DTESSERA_BUILD_FUZZ=ON
//   cmake --build build-fuzz --target tessera_control_protocol_fuzz
// Run for 60 s:
//   mkdir -p /tmp/control-corpus
//   build-fuzz/tests/fuzz/tessera_control_protocol_fuzz -max_total_time=60 -max_len=4096 \
//       /tmp/control-corpus tests/fuzz/corpus/control_protocol

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <variant>
#include <vector>

#include "fuzz_check.hpp"
#include "tessera/daemon/control_protocol.hpp"
#include "tessera/daemon/tenant_table.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace {

using tessera::fuzz::require;
using namespace tessera;

void check_ranges(const daemon::TenantTable& table, const gpu::PartitionGrid& grid) {
  const bool fill = table.policy_name() == "priority-fill";
  std::vector<std::vector<bool>> used(2,
                                      std::vector<bool>(static_cast<std::size_t>(grid.device_sms)));
  for (const daemon::TenantView& t : table.tenants()) {
    const daemon_abi::Assignment a = t.assignment;
    if (a.sms == daemon_abi::kHoldSms || a.sms == daemon_abi::kWholeGpuSms) continue;
    require(a.first_sm + a.sms <= static_cast<std::uint32_t>(grid.usable_sms));
    if (fill) {
      require(a.first_sm + a.sms == static_cast<std::uint32_t>(grid.usable_sms));
      require(a.priority == 0);
      continue;
    }
    for (std::uint32_t sm = a.first_sm; sm < a.first_sm + a.sms; ++sm) {
      require(!used[static_cast<std::size_t>(t.device)][sm]);
      used[static_cast<std::size_t>(t.device)][sm] = true;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const gpu::PartitionGrid grid = *gpu::PartitionGrid::of(*hw::find_gpu("h100"));
  daemon::TableOptions options;
  options.policy.slo_guided = true;
  daemon::TenantTable table({grid, grid}, *daemon::make_node_policy("cogpu", options.policy),
                            options);
  std::vector<std::unique_ptr<daemon_abi::AssignmentPage>> pages;
  std::vector<int> ids;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  core::Nanos now = core::seconds(1);
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t nl = text.find('\n', start);
    const std::string_view line =
        text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    now += core::millis(1);
    if (!line.empty() && line[0] == '+') {
      if (!pages.empty()) {
        pages.back()->launches.fetch_add(1);
        pages.back()->last_launch_ns.store(static_cast<std::uint64_t>(now));
      }
    } else if (!line.empty() && line[0] == '*') {
      if (!pages.empty()) {
        pages.back()->last_step_ns.store(static_cast<std::uint64_t>(core::millis(line.size())));
        pages.back()->last_step_sms.store(132);
        pages.back()->steps.fetch_add(1);
      }
    } else if (line.size() == 1 && line[0] == '-') {
      if (!ids.empty()) {
        table.remove(ids.back());
        ids.pop_back();
      }
    } else if (auto request = daemon::parse_request(line); request) {
      if (const auto* r = std::get_if<daemon::RegisterRequest>(&*request)) {
        auto page = std::make_unique<daemon_abi::AssignmentPage>();
        auto id = table.add(*r, page.get(), now);
        if (id) {
          ids.push_back(*id);
          pages.push_back(std::move(page));
        }
      } else if (const auto* r = std::get_if<daemon::SetRequest>(&*request)) {
        (void)table.set(*r);
      } else if (const auto* r = std::get_if<daemon::PolicyRequest>(&*request)) {
        (void)table.set_policy(r->name);
      }
    } else {
      require(!request.error().message().empty());
    }
    table.tick(now);
    check_ranges(table, grid);
  }
  (void)table.to_json().dump();
  return 0;
}
