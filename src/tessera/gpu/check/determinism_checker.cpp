#include "tessera/gpu/check/determinism_checker.hpp"

#include <algorithm>
#include <utility>

#include "tessera/core/try.hpp"
#include "tessera/gpu/modes/tenant_table.hpp"

namespace tessera::gpu {

namespace {

std::string_view pipe_name(workload::ComputePipe p) {
  return workload::to_string(p);
}

// The first launch-configuration field in which `got` differs from `want`, or none.
std::optional<std::string> differs(const workload::Kernel& want, const workload::Kernel& got) {
  if (want.name != got.name) return fmt::format("kernel '{}' ran instead", got.name);
  if (want.blocks != got.blocks) {
    return fmt::format("its grid has {} blocks instead of {}", got.blocks, want.blocks);
  }
  if (want.block.threads != got.block.threads) {
    return fmt::format("{} threads per block instead of {}", got.block.threads, want.block.threads);
  }
  if (want.block.registers_per_thread != got.block.registers_per_thread) {
    return fmt::format("{} registers per thread instead of {}", got.block.registers_per_thread,
                       want.block.registers_per_thread);
  }
  if (want.block.shared_memory_bytes != got.block.shared_memory_bytes) {
    return fmt::format("{} bytes of shared memory per block instead of {}",
                       got.block.shared_memory_bytes, want.block.shared_memory_bytes);
  }
  if (want.flops_per_block != got.flops_per_block) {
    return fmt::format("{} FLOPs per block instead of {}", got.flops_per_block,
                       want.flops_per_block);
  }
  if (want.bytes_per_block != got.bytes_per_block) {
    return fmt::format("{} bytes per block instead of {}", got.bytes_per_block,
                       want.bytes_per_block);
  }
  if (want.pipe != got.pipe) {
    return fmt::format("it ran on the {} pipe instead of {}", pipe_name(got.pipe),
                       pipe_name(want.pipe));
  }
  if (want.block_independent != got.block_independent) {
    return fmt::format("it is declared {}block-independent, the submitted kernel {}",
                       got.block_independent ? "" : "not ",
                       want.block_independent ? "is" : "is not");
  }
  // A persistent kernel's checkpoints are where its blocks poll between tiles: part of how its
  // blocks walk their work, so a policy may not change them either.
  if (want.checkpoints != got.checkpoints) {
    return fmt::format("{} checkpoints instead of {}", got.checkpoints, want.checkpoints);
  }
  if (want.kind != got.kind) {
    return fmt::format("it is a {} kernel instead of {}", workload::to_string(got.kind),
                       workload::to_string(want.kind));
  }
  return std::nullopt;
}

}  // namespace

std::int64_t DeterminismChecker::on_submit(device::ContextId context,
                                           const workload::KernelSequencePtr& sequence) {
  ContextState& s = contexts_[context];
  // A null sequence is kept too (it runs nothing), so that pending, submission numbers and
  // forget_last all count the same submissions.
  s.pending.push_back(sequence);
  return s.submitted++;
}

void DeterminismChecker::on_done(device::ContextId context, std::int64_t number) {
  ContextState& s = contexts_[context];
  s.reported_done = std::max(s.reported_done, number + 1);
}

const std::optional<core::Error>& DeterminismChecker::finish() {
  for (auto& [context, s] : contexts_) {
    if (violation_) break;
    expected(s);  // steps past sequences whose last kernel has run
    if (s.reported_done > s.submission) {
      const workload::Kernel* k = expected(s);
      fail(context, s,
           fmt::format("the submission was reported done, but {} of the {} blocks of '{}' never "
                       "ran",
                       k ? k->blocks - s.covered_blocks : 0, k ? k->blocks : 0,
                       k ? k->name : std::string_view("?")));
    }
  }
  return violation_;
}

void DeterminismChecker::forget_last(device::ContextId context) {
  const auto it = contexts_.find(context);
  if (it == contexts_.end() || it->second.submitted == 0) return;
  if (!it->second.pending.empty()) it->second.pending.pop_back();
  --it->second.submitted;
  it->second.current = nullptr;
}

void DeterminismChecker::name_context(device::ContextId context, std::string name) {
  contexts_[context].name = std::move(name);
}

const workload::Kernel* DeterminismChecker::expected(ContextState& state) {
  if (state.current != nullptr) return state.current;
  while (!state.pending.empty()) {
    if (const auto& front = state.pending.front()) {
      const auto& groups = front->groups;
      while (state.group < groups.size()) {
        const auto& g = groups[state.group];
        if (state.repeat < g.repeat && state.kernel < g.kernels.size()) {
          state.current_group = &g;
          return state.current = &g.kernels[state.kernel];
        }
        ++state.group;
        state.repeat = 0;
        state.kernel = 0;
      }
    }
    state.pending.pop_front();
    ++state.submission;
    state.group = 0;
    state.position = 0;
  }
  return nullptr;
}

void DeterminismChecker::fail(device::ContextId context, const ContextState& state,
                              std::string what) {
  const std::string tenant = state.name.empty()
                                 ? fmt::format("context {}", context)
                                 : fmt::format("tenant '{}' (context {})", state.name, context);
  violation_ = core::Error(
      core::Domain::kGpu, core::Code::kInternal,
      fmt::format("determinism invariant broken: {}, submission {}, kernel {}: {}; a policy may "
                  "choose where and when a kernel runs, never its launch configuration, its "
                  "blocks or its order",
                  tenant, state.submission, state.position, what));
}

void DeterminismChecker::on_kernel_complete(const device::KernelEvent& e) {
  if (violation_) return;  // the first violation is the one to report; later ones follow from it
  if (last_state_ != nullptr && e.context == last_context_)
    return check(e.context, *last_state_, e);
  const auto it = contexts_.find(e.context);
  if (it == contexts_.end()) {
    violation_ = core::Error(
        core::Domain::kGpu, core::Code::kInternal,
        fmt::format("determinism invariant broken: a kernel ('{}') ran under context {}, which "
                    "no tenant submitted to; every stream of tenant i must carry context "
                    "context_for(i)",
                    e.kernel ? e.kernel->name : std::string_view("?"), e.context));
    return;
  }
  last_context_ = e.context;
  last_state_ = &it->second;
  check(e.context, it->second, e);
}

namespace {

// The common case, kept apart from the diagnostics: the expected kernel itself, its whole grid in
// one launch, nothing of it run before (so no range is recorded and current_end is unset), after
// the previous kernel. Every check of check_in_detail passes it.
bool whole_expected(const workload::Kernel* want, bool yielded, std::int64_t covered_blocks,
                    core::Nanos previous_end, const device::KernelEvent& e) {
  return want != nullptr && e.kernel == want && !e.yielded && !yielded && covered_blocks == 0 &&
         e.start >= previous_end && e.blocks.begin == 0 && e.blocks.end == want->blocks &&
         want->blocks > 0;
}

}  // namespace

void DeterminismChecker::on_kernels_complete(std::span<const device::KernelEvent> events) {
  for (const auto& e : events) {
    if (violation_) return;
    ContextState* s = e.context == last_context_ ? last_state_ : nullptr;
    if (s != nullptr &&
        whole_expected(s->current, s->yielded, s->covered_blocks, s->previous_end, e)) {
      complete_whole(*s, e.end);
    } else {
      on_kernel_complete(e);
    }
  }
}

void DeterminismChecker::check(device::ContextId context, ContextState& s,
                               const device::KernelEvent& e) {
  if (whole_expected(s.current, s.yielded, s.covered_blocks, s.previous_end, e)) {
    return complete_whole(s, e.end);
  }
  check_in_detail(context, s, e);
}

void DeterminismChecker::check_in_detail(device::ContextId context, ContextState& s,
                                         const device::KernelEvent& e) {
  const workload::Kernel* want = expected(s);
  if (want == nullptr) {
    return fail(context, s,
                fmt::format("a kernel ('{}') ran after every kernel submitted had run",
                            e.kernel ? e.kernel->name : std::string_view("?")));
  }
  if (e.kernel == nullptr) return fail(context, s, "the device reported no kernel");
  // The submitted kernel itself (the common case) has its own launch configuration; only a copy
  // needs comparing field by field.
  if (auto diff = e.kernel == want ? std::nullopt : differs(*want, *e.kernel)) {
    const std::string where =
        s.yielded
            ? fmt::format("after '{}' yielded, the rest of it should have run, but ", want->name)
        : s.covered_blocks > 0 ? fmt::format("'{}' had run {} of its {} blocks when ", want->name,
                                             s.covered_blocks, want->blocks)
                               : fmt::format("expected '{}', but ", want->name);
    return fail(context, s, where + *diff);
  }
  if (e.start < s.previous_end) {
    return fail(context, s,
                fmt::format("a launch of '{}' started at {} ns, before the previous kernel's "
                            "last launch ended at {} ns",
                            want->name, e.start, s.previous_end));
  }
  const device::BlockRange r = e.blocks;
  if (r.begin < 0 || r.end > want->blocks || r.size() <= 0) {
    return fail(context, s,
                fmt::format("a launch of '{}' reported blocks [{}, {}), which is not a non-empty "
                            "part of its grid [0, {})",
                            want->name, r.begin, r.end, want->blocks));
  }
  if (!want->block_independent && (r.begin != 0 || r.end != want->blocks)) {
    return fail(context, s,
                fmt::format("'{}' is not block-independent but ran blocks [{}, {}) of [0, {}) "
                            "in one launch; it must run whole",
                            want->name, r.begin, r.end, want->blocks));
  }
  // Ranges run so far are disjoint and kept by their start: only the neighbours can overlap.
  if (!s.covered.empty()) {
    const auto next = s.covered.lower_bound(r.begin);
    const bool overlaps_next = next != s.covered.end() && next->first < r.end;
    const bool overlaps_prev = next != s.covered.begin() && std::prev(next)->second > r.begin;
    if (overlaps_next || overlaps_prev) {
      return fail(context, s,
                  fmt::format("blocks [{}, {}) of '{}' {} again: some of them had already run",
                              r.begin, r.end, want->name, e.yielded ? "were started" : "ran"));
    }
  }
  s.current_end = std::max(s.current_end, e.end);
  if (e.yielded) {
    // A yielded launch stopped part-way; its blocks count once the rest of it has run.
    s.yielded = true;
    return;
  }
  // A whole-grid launch (the common case) completes the kernel without touching the map.
  if (r.size() < want->blocks) s.covered.emplace(r.begin, r.end);
  s.covered_blocks += r.size();
  if (s.covered_blocks < want->blocks) return;
  complete(s);
}

void DeterminismChecker::complete(ContextState& s) {
  s.previous_end = s.current_end;
  s.current_end = std::numeric_limits<core::Nanos>::min();
  if (!s.covered.empty()) s.covered.clear();
  s.covered_blocks = 0;
  s.yielded = false;
  next_kernel(s);
}

void DeterminismChecker::complete_whole(ContextState& s, core::Nanos end) {
  s.previous_end = end;
  next_kernel(s);
}

void DeterminismChecker::next_kernel(ContextState& s) {
  ++kernels_checked_;
  const workload::KernelGroup& g = *s.current_group;
  if (++s.kernel == g.kernels.size()) {
    s.kernel = 0;
    ++s.repeat;
  }
  ++s.position;
  // The next kernel of the same group is the common case; expected() finds any other.
  s.current = s.repeat < g.repeat ? &g.kernels[s.kernel] : nullptr;
}

CheckedMode::CheckedMode(std::unique_ptr<SharingMode> inner) : inner_(std::move(inner)) {}

core::Status CheckedMode::attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) {
  TESSERA_TRY(inner_->attach(device, tenants));
  contexts_.clear();
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    contexts_.emplace_back(tenants[i].id, context_for(i));
    checker_.name_context(context_for(i), tenants[i].name);
  }
  device.add_observer(&checker_);
  return {};
}

core::Status CheckedMode::submit(TenantId tenant, workload::KernelSequencePtr sequence,
                                 std::uint64_t tag, device::DoneCallback done) {
  const auto it = std::find_if(contexts_.begin(), contexts_.end(),
                               [tenant](const auto& c) { return c.first == tenant; });
  // Recorded before forwarding: a device may report the first kernel before submit returns.
  if (it == contexts_.end())
    return inner_->submit(tenant, std::move(sequence), tag, std::move(done));
  const device::ContextId context = it->second;
  const std::int64_t number = checker_.on_submit(context, sequence);
  auto status = inner_->submit(tenant, std::move(sequence), tag,
                               [checker = &checker_, context, number,
                                done = std::move(done)](const device::SubmissionDone& d) {
                                 checker->on_done(context, number);
                                 if (done) done(d);
                               });
  if (!status) checker_.forget_last(context);
  return status;
}

core::Status CheckedMode::verdict() {
  if (const auto& v = checker_.finish()) {
    return std::unexpected(v->with_context(fmt::format("mode '{}'", inner_->name())));
  }
  return {};
}

}  // namespace tessera::gpu
