#include "tessera/daemon/tenant_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "tessera/core/enum_table.hpp"
#include "tessera/core/try.hpp"
#include "tessera/gpu/policy/fill_policy.hpp"

namespace tessera::daemon {
namespace {

using daemon_abi::Assignment;

core::Error invalid(std::string message) {
  return core::Error(core::Domain::kConfig, core::Code::kInvalidArgument, std::move(message));
}

// Shares are typed by people: a rounding error of 1e-9 is not an over-subscription.
constexpr double kShareSlack = 1e-9;

nlohmann::json assignment_json(Assignment a) {
  if (a.sms == daemon_abi::kHoldSms) return "hold";
  if (a.sms == daemon_abi::kWholeGpuSms) return "whole-gpu";
  return {{"first_sm", a.first_sm}, {"sms", a.sms}};
}

}  // namespace

constexpr core::EnumTable<Mechanism, 3> kMechanisms("mechanism", core::Domain::kConfig,
                                                    {{{Mechanism::kGreenContexts, "green-contexts"},
                                                      {Mechanism::kGate, "gate"},
                                                      {Mechanism::kMpsPercentage,
                                                       "mps-percentage"}}});

std::string_view mechanism_name(Mechanism m) {
  return kMechanisms.to_string(m);
}

core::Result<Mechanism> mechanism_named(std::string_view name) {
  return kMechanisms.parse(name);
}

int TenantTable::mps_percentage(const TenantSettings& settings) const {
  if (options_.mechanism != Mechanism::kMpsPercentage || !(settings.sm_share > 0)) return 0;
  // MPS takes whole percents; rounding up never gives less than the share asked for.
  const double percent = std::ceil(settings.sm_share * 100 - 1e-9);
  return static_cast<int>(std::clamp(percent, 1.0, 100.0));
}

TenantTable::TenantTable(std::vector<gpu::PartitionGrid> devices,
                         std::unique_ptr<NodePolicy> policy, TableOptions options)
    : devices_(std::move(devices)), policy_(std::move(policy)), options_(options) {
  for (const gpu::PartitionGrid& grid : devices_) {
    reserve_.push_back(gpu::reserve_sms(grid, options_.policy.best_effort_share));
  }
}

TenantTable::Tenant* TenantTable::find(std::string_view name) {
  for (Tenant& t : tenants_) {
    if (t.registration.tenant == name) return &t;
  }
  return nullptr;
}

core::Result<int> TenantTable::add(const RegisterRequest& asked, daemon_abi::AssignmentPage* page,
                                   core::Nanos now) {
  RegisterRequest request = asked;
  std::string claim;
  if (const auto granted = grant_for(asked.tenant)) {
    apply(*granted, request);
    claim = granted->claim;
  }
  if (find(request.tenant) != nullptr) {
    return std::unexpected(invalid(fmt::format(
        "tenant '{}' is already registered (each process registers under a name of its own)",
        request.tenant)));
  }
  TESSERA_TRY(check_device(request.device));
  TESSERA_TRY(check_shares(request.device, request.tenant, claim, request.settings.sm_share));
  if (static_cast<int>(tenants_.size()) >= options_.max_tenants) {
    return std::unexpected(
        core::Error(core::Domain::kConfig, core::Code::kResourceExhausted,
                    fmt::format("the daemon already holds {} tenants", tenants_.size())));
  }
  Tenant t;
  t.id = next_id_++;
  t.registration = request;
  t.claim = claim;
  t.page = page;
  t.launches_seen = page->launches.load(std::memory_order_relaxed);
  t.steps_seen = page->steps.load(std::memory_order_relaxed);
  t.last_change = now;
  page->granule_sms.store(
      static_cast<std::uint32_t>(devices_[static_cast<std::size_t>(request.device)].granularity),
      std::memory_order_relaxed);
  page->memory_limit_assigned.store(request.settings.memory_limit, std::memory_order_relaxed);
  page->assignment.store(daemon_abi::pack({.first_sm = 0, .sms = daemon_abi::kHoldSms}),
                         std::memory_order_release);
  tenants_.push_back(std::move(t));
  return tenants_.back().id;
}

void TenantTable::remove(int id) {
  std::erase_if(tenants_, [id](const Tenant& t) { return t.id == id; });
}

core::Status TenantTable::set(const SetRequest& request) {
  Tenant* t = find(request.tenant);
  if (t == nullptr) {
    return core::failf(core::Domain::kConfig, core::Code::kNotFound,
                       "no tenant named '{}' is registered", request.tenant);
  }
  if (request.sm_share) {
    TESSERA_TRY(
        check_shares(t->registration.device, t->registration.tenant, t->claim, *request.sm_share));
  }
  apply(request, t->registration.settings);
  if (request.memory_limit) {
    // Read by the interposer at the tenant's next allocation; no round needed.
    t->page->memory_limit_assigned.store(*request.memory_limit, std::memory_order_release);
  }
  return {};
}

core::Status TenantTable::check_device(int device) const {
  if (device < 0 || device >= static_cast<int>(devices_.size())) {
    return std::unexpected(invalid(
        fmt::format("device {} is not one of this daemon's {} GPU(s)", device, devices_.size())));
  }
  return {};
}

double TenantTable::promised_shares(int device, std::string_view tenant,
                                    std::string_view claim) const {
  double total = 0;
  for (const GrantRequest& g : grants_) {
    if (g.device != device || g.claim == claim) continue;
    double share = g.settings.sm_share;
    for (const Tenant& t : tenants_) {
      if (t.claim == g.claim) share = std::max(share, t.registration.settings.sm_share);
    }
    total += share;
  }
  for (const Tenant& t : tenants_) {
    if (t.registration.device == device && t.claim.empty() && t.registration.tenant != tenant) {
      total += t.registration.settings.sm_share;
    }
  }
  return total;
}

core::Status TenantTable::check_shares(int device, std::string_view tenant, std::string_view claim,
                                       double share) const {
  if (share == 0) return {};
  const double others = promised_shares(device, tenant, claim);
  if (others + share > 1 + kShareSlack) {
    return std::unexpected(invalid(
        fmt::format("tenant '{}': an SM share of {} with the {} the others on device {} hold "
                    "adds up to more than 1",
                    tenant, share, others, device)));
  }
  return {};
}

core::Result<bool> TenantTable::grant(const GrantRequest& g) {
  for (const GrantRequest& held : grants_) {
    if (held.claim == g.claim) {
      if (held == g) return true;
      return std::unexpected(invalid(fmt::format(
          "claim '{}' is already granted (tenant '{}' on device {}) with other fields; a grant "
          "does not change: revoke it first",
          g.claim, held.tenant, held.device)));
    }
    if (held.tenant == g.tenant) {
      return std::unexpected(
          invalid(fmt::format("tenant '{}' is already granted to claim '{}'; claim '{}' cannot "
                              "have it too",
                              g.tenant, held.claim, g.claim)));
    }
  }
  TESSERA_TRY(check_device(g.device));
  const double promised = promised_shares(g.device, "", g.claim);
  if (g.settings.sm_share > 0 && promised + g.settings.sm_share > 1 + kShareSlack) {
    const double free = promised > 1 - kShareSlack ? 0 : 1 - promised;
    return std::unexpected(
        invalid(fmt::format("device {} has {:g} of its SMs free to grant; claim '{}' asks {:g}",
                            g.device, free, g.claim, g.settings.sm_share)));
  }
  if (static_cast<int>(grants_.size()) >= options_.max_tenants) {
    return std::unexpected(
        core::Error(core::Domain::kConfig, core::Code::kResourceExhausted,
                    fmt::format("the daemon already holds {} grants, as many tenants as it takes",
                                grants_.size())));
  }
  grants_.push_back(g);
  return false;
}

bool TenantTable::revoke(std::string_view claim) {
  for (Tenant& t : tenants_) {
    if (t.claim == claim) t.claim.clear();
  }
  return std::erase_if(grants_, [&](const GrantRequest& g) { return g.claim == claim; }) > 0;
}

std::optional<GrantRequest> TenantTable::grant_for(std::string_view tenant) const {
  for (const GrantRequest& g : grants_) {
    if (g.tenant == tenant) return g;
  }
  return std::nullopt;
}

core::Status TenantTable::set_policy(std::string_view name) {
  auto policy = make_node_policy(name, options_.policy);
  if (!policy) return std::unexpected(policy.error());
  policy_ = std::move(*policy);
  return {};
}

int TenantTable::tick(core::Nanos now) {
  ++rounds_;
  for (Tenant& t : tenants_) {
    const std::uint64_t launches = t.page->launches.load(std::memory_order_relaxed);
    const auto last =
        static_cast<core::Nanos>(t.page->last_launch_ns.load(std::memory_order_relaxed));
    t.has_work = launches != t.launches_seen || (last != 0 && now - last < options_.idle_after);
    t.launches_seen = launches;
    const std::uint64_t steps = t.page->steps.load(std::memory_order_acquire);
    if (steps != t.steps_seen) {
      t.steps_seen = steps;
      t.decode.latency =
          static_cast<core::Nanos>(t.page->last_step_ns.load(std::memory_order_relaxed));
      t.decode.sms = static_cast<int>(t.page->last_step_sms.load(std::memory_order_relaxed));
      t.last_step_seen = now;
      t.new_step = true;
    }
  }
  int changes = 0;
  for (int d = 0; d < static_cast<int>(devices_.size()); ++d) decide(d, now, changes);
  return changes;
}

void TenantTable::decide(int device, core::Nanos now, int& changes) {
  std::vector<Tenant*> on;
  for (Tenant& t : tenants_) {
    if (t.registration.device == device) on.push_back(&t);
  }
  if (on.empty()) return;
  const gpu::PartitionGrid& grid = devices_[static_cast<std::size_t>(device)];
  follow_slack(device, on);
  std::optional<std::vector<Assignment>> next;
  switch (options_.mechanism) {
    case Mechanism::kGate: next = gate(on); break;
    case Mechanism::kMpsPercentage: next = whole_gpu(on); break;
    case Mechanism::kGreenContexts: next = ask_policy(on, device, now); break;
  }
  if (!next) return;
  for (std::size_t i = 0; i < on.size(); ++i) {
    Tenant& t = *on[i];
    Assignment a = (*next)[i];
    const Assignment current =
        daemon_abi::unpack(t.page->assignment.load(std::memory_order_relaxed));
    if (a.first_sm == current.first_sm && a.sms == current.sms && a.priority == current.priority)
      continue;
    a.sequence = ++t.sequence;
    t.page->assignment.store(daemon_abi::pack(a), std::memory_order_release);
    const int sms = a.sms == daemon_abi::kHoldSms       ? 0
                    : a.sms == daemon_abi::kWholeGpuSms ? grid.usable_sms
                                                        : static_cast<int>(a.sms);
    if (sms != t.sms) t.last_change = now;
    t.sms = sms;
    ++t.changes;
    ++changes;
  }
}

void TenantTable::follow_slack(int device, const std::vector<Tenant*>& on) {
  const gpu::PartitionGrid& grid = devices_[static_cast<std::size_t>(device)];
  int& reserve = reserve_[static_cast<std::size_t>(device)];
  const int floor = gpu::reserve_sms(grid, options_.policy.best_effort_share);
  for (Tenant* t : on) {
    const TenantSettings& s = t->registration.settings;
    const bool served =
        s.tenant_class == TenantClass::kLatencyCritical && (s.tpot_slo > 0 || s.ttft_slo > 0);
    if (options_.policy.slo_guided && served && t->new_step) {
      const auto budget =
          static_cast<core::Nanos>(gpu::kSloStepBudget * static_cast<double>(s.tpot_slo));
      reserve = gpu::next_reserve(grid, floor, reserve, t->decode.latency, budget);
    }
    t->new_step = false;
  }
}

std::optional<std::vector<Assignment>> TenantTable::ask_policy(const std::vector<Tenant*>& on,
                                                               int device, core::Nanos now) const {
  const gpu::PartitionGrid& grid = devices_[static_cast<std::size_t>(device)];
  gpu::RemapSnapshot snapshot;
  snapshot.now = now;
  snapshot.grid = grid;
  snapshot.min_residency = options_.min_residency;
  std::vector<std::string> names;
  for (const Tenant* t : on) {
    const TenantSettings& s = t->registration.settings;
    gpu::TenantSnapshot ts;
    ts.id = static_cast<gpu::TenantId>(t->id);
    ts.priority = s.priority;
    ts.latency_critical = s.tenant_class == TenantClass::kLatencyCritical;
    ts.ttft_slo = s.ttft_slo;
    ts.tpot_slo = s.tpot_slo;
    ts.sm_share = s.sm_share;
    ts.has_work = t->has_work;
    ts.decoding = t->decode.latency > 0 && now - t->last_step_seen < options_.idle_after;
    if (ts.decoding) ts.decode = t->decode;
    if (ts.decoding && ts.has_work) ts.next_phase = workload::Phase::kDecode;
    ts.sms = t->sms;
    ts.last_change = t->last_change;
    snapshot.tenants.push_back(ts);
    names.push_back(t->registration.tenant);
  }
  const int reserve = options_.policy.slo_guided ? reserve_[static_cast<std::size_t>(device)] : 0;
  return policy_->decide(snapshot, PolicyInputs{.names = names, .reserve_sms = reserve});
}

std::vector<Assignment> TenantTable::gate(const std::vector<Tenant*>& on) {
  bool inference_busy = false;
  for (const Tenant* t : on) {
    inference_busy = inference_busy || (t->has_work && t->registration.settings.tenant_class ==
                                                           TenantClass::kLatencyCritical);
  }
  std::vector<Assignment> out;
  for (const Tenant* t : on) {
    const bool held =
        inference_busy && t->registration.settings.tenant_class == TenantClass::kBestEffort;
    out.push_back({.first_sm = 0, .sms = held ? daemon_abi::kHoldSms : daemon_abi::kWholeGpuSms});
  }
  return out;
}

std::vector<Assignment> TenantTable::whole_gpu(const std::vector<Tenant*>& on) {
  return std::vector<Assignment>(on.size(),
                                 Assignment{.first_sm = 0, .sms = daemon_abi::kWholeGpuSms});
}

std::vector<TenantView> TenantTable::tenants() const {
  std::vector<TenantView> out;
  for (const Tenant& t : tenants_) {
    const daemon_abi::AssignmentPage& p = *t.page;
    constexpr auto relaxed = std::memory_order_relaxed;
    TenantView v;
    v.name = t.registration.tenant;
    v.claim = t.claim;
    v.pid = t.registration.pid;
    v.device = t.registration.device;
    v.settings = t.registration.settings;
    v.assignment = daemon_abi::unpack(p.assignment.load(std::memory_order_acquire));
    v.has_work = t.has_work;
    v.assignment_changes = t.changes;
    v.launches = p.launches.load(relaxed);
    v.routed_sms = p.routed_sms.load(relaxed);
    v.held_launches = p.held_launches.load(relaxed);
    v.held = static_cast<core::Nanos>(p.held_ns.load(relaxed));
    v.hold_timeouts = p.hold_timeouts.load(relaxed);
    v.memory_used = p.memory_used.load(relaxed);
    v.memory_limit = p.memory_limit.load(relaxed);
    v.memory_refused = p.memory_refused.load(relaxed);
    v.steps = p.steps.load(relaxed);
    v.last_step = static_cast<core::Nanos>(p.last_step_ns.load(relaxed));
    v.last_step_sms = p.last_step_sms.load(relaxed);
    out.push_back(std::move(v));
  }
  return out;
}

nlohmann::json TenantTable::to_json() const {
  nlohmann::json devices = nlohmann::json::array();
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    nlohmann::json device = {{"device", d},
                             {"sms", devices_[d].device_sms},
                             {"usable_sms", devices_[d].usable_sms},
                             {"granularity", devices_[d].granularity}};
    if (options_.policy.slo_guided) device["reserve_sms"] = reserve_[d];
    devices.push_back(std::move(device));
  }
  nlohmann::json tenants = nlohmann::json::array();
  for (const TenantView& t : this->tenants()) {
    nlohmann::json row{{"tenant", t.name},
                       {"pid", t.pid},
                       {"device", t.device},
                       {"class", tenant_class_name(t.settings.tenant_class)},
                       {"priority", t.settings.priority},
                       {"tpot_slo_ms", core::to_millis(t.settings.tpot_slo)},
                       {"ttft_slo_ms", core::to_millis(t.settings.ttft_slo)},
                       {"sm_share", t.settings.sm_share},
                       {"assignment", assignment_json(t.assignment)},
                       {"stream_priority", t.assignment.priority},
                       {"assignment_changes", t.assignment_changes},
                       {"has_work", t.has_work},
                       {"launches", t.launches},
                       {"routed_sms", t.routed_sms},
                       {"held_launches", t.held_launches},
                       {"held_ms", core::to_millis(t.held)},
                       {"hold_timeouts", t.hold_timeouts},
                       {"memory_used", t.memory_used},
                       {"memory_limit", t.memory_limit},
                       {"memory_limit_assigned", t.settings.memory_limit},
                       {"memory_refused", t.memory_refused},
                       {"steps", t.steps},
                       {"last_step_ms", core::to_millis(t.last_step)},
                       {"last_step_sms", t.last_step_sms}};
    if (!t.claim.empty()) row["claim"] = t.claim;
    tenants.push_back(std::move(row));
  }
  nlohmann::json grants = nlohmann::json::array();
  for (const GrantRequest& g : grants_) {
    nlohmann::json grant = grant_request_json(g);
    grant.erase("op");
    grants.push_back(std::move(grant));
  }
  return {{"policy", policy_->name()}, {"mechanism", mechanism_name(options_.mechanism)},
          {"rounds", rounds_},         {"devices", devices},
          {"tenants", tenants},        {"grants", grants}};
}

std::size_t TenantTable::size() const {
  return tenants_.size();
}

}  // namespace tessera::daemon
