#include "tessera/mig/policy/co_run.hpp"

#include <algorithm>

namespace tessera::mig {

std::optional<std::pair<double, double>> slowdowns(const CoRunTable& table, std::size_t a,
                                                   std::size_t b, int profile_id) {
  const bool swapped = b < a;
  auto it = table.find(swapped ? CoRunKey{b, a, profile_id} : CoRunKey{a, b, profile_id});
  if (it == table.end()) return std::nullopt;
  const Slowdowns& s = it->second;
  return swapped ? std::pair{s.second, s.first} : std::pair{s.first, s.second};
}

namespace {

core::Nanos scaled(core::Nanos t, double factor) {
  return core::round_to_nanos(static_cast<double>(t) * factor);
}

}  // namespace

std::pair<core::Nanos, core::Nanos> shared_ends(const ShareTerm& a, const ShareTerm& b) {
  if (b.begins < a.begins) {
    const auto [eb, ea] = shared_ends(b, a);
    return {ea, eb};
  }
  // `a` begins first and runs alone until `b` begins.
  if (a.begins + a.work <= b.begins) return {a.begins + a.work, b.begins + b.work};
  const core::Nanos a_left = a.work - (b.begins - a.begins);
  const core::Nanos a_together = scaled(a_left, a.slowdown);
  const core::Nanos b_together = scaled(b.work, b.slowdown);
  if (a_together <= b_together) {
    const core::Nanos a_end = b.begins + a_together;
    // b did a_together / b.slowdown of its work beside a; the rest runs alone.
    return {a_end, a_end + b.work - scaled(a_together, 1 / b.slowdown)};
  }
  const core::Nanos b_end = b.begins + b_together;
  return {b_end + a_left - scaled(b_together, 1 / a.slowdown), b_end};
}

core::Nanos work_left_at(const ShareTerm& a, const ShareTerm& b, core::Nanos at) {
  const core::Nanos together_from = std::max(a.begins, b.begins);
  core::Nanos done = std::clamp<core::Nanos>(std::min(at, together_from) - a.begins, 0, a.work);
  if (at > together_from) done += scaled(at - together_from, 1 / a.slowdown);
  return std::max<core::Nanos>(0, a.work - done);
}

std::pair<ShareTerm, ShareTerm> join(ShareTerm partner, core::Nanos now, core::Nanos start_time,
                                     core::Nanos work, std::pair<double, double> slowdowns) {
  partner.work =
      std::max<core::Nanos>(0, partner.work - std::max<core::Nanos>(0, now - partner.begins));
  partner.begins = std::max(now, partner.begins);
  partner.slowdown = slowdowns.first;
  const ShareTerm joiner{.begins = std::max(now + start_time, partner.begins),
                         .work = work,
                         .slowdown = slowdowns.second};
  return {partner, joiner};
}

ShareTerm survivor(const ShareTerm& a, const ShareTerm& b, core::Nanos at) {
  return {.begins = std::max(at, a.begins), .work = work_left_at(a, b, at), .slowdown = 1};
}

}  // namespace tessera::mig
