#pragma once
// Shared set-up for the sharing-mode tests: a fake device on a manual executor, and tenant lists.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/fakes/fake_device.hpp"
#include "support/fakes/manual_executor.hpp"
#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

inline std::vector<TenantInfo> tenants(std::initializer_list<std::pair<const char*, double>> list) {
  std::vector<TenantInfo> out;
  TenantId id = 10;  // not 0..n-1, so code that confuses ids with positions fails
  for (const auto& [name, share] : list) {
    out.push_back(TenantInfo{.id = id++, .name = name, .sm_share = share});
  }
  return out;
}

// Records when each submission finished, by tag.
struct Completions {
  std::vector<std::pair<std::uint64_t, core::Nanos>> done;
  device::DoneCallback callback() {
    return [this](const device::SubmissionDone& d) { done.emplace_back(d.tag, d.finished); };
  }
};

}  // namespace tessera::gpu
