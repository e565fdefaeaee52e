// Synthetic request arrivals: a renewal process whose gaps are exponential (Poisson arrivals)
// or Gamma-distributed (bursty when cv > 1), with uniformly drawn token counts.

#include "tessera/workload/arrivals.hpp"

#include <cmath>

namespace tessera::workload {

namespace {

core::Status check_range(const LengthRange& r, std::string_view what, const std::string& name) {
  if (r.min < 1 || r.min > r.max) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "arrivals '{}': {} range [{}, {}] is invalid; it needs 1 <= min <= max",
                       name, what, r.min, r.max);
  }
  return {};
}

core::Status validate(const SyntheticArrivals& spec, core::Nanos horizon, const std::string& name) {
  if (!std::isfinite(spec.rate_per_s) || spec.rate_per_s <= 0) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "arrivals '{}': rate must be a positive number of requests per second, "
                       "got {}",
                       name, spec.rate_per_s);
  }
  if (!std::isfinite(spec.cv) || spec.cv <= 0) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "arrivals '{}': cv (coefficient of variation of the gaps) must be "
                       "positive; use 1 for Poisson arrivals, >1 for bursts; got {}",
                       name, spec.cv);
  }
  if (auto s = check_range(spec.input_tokens, "input_tokens", name); !s) return s;
  if (auto s = check_range(spec.output_tokens, "output_tokens", name); !s) return s;
  if (horizon < 0) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "arrivals '{}': horizon must not be negative, got {} ns", name, horizon);
  }
  const double expected = spec.rate_per_s * core::to_seconds(horizon);
  if (expected > kMaxSyntheticRequests) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "arrivals '{}': rate {}/s over {} s would give about {:.3g} requests, "
                       "more than the limit of {:.3g}; lower the rate or the horizon",
                       name, spec.rate_per_s, core::to_seconds(horizon), expected,
                       kMaxSyntheticRequests);
  }
  return {};
}

int draw_length(core::RandomStream& rng, const LengthRange& r) {
  const auto span = static_cast<std::uint64_t>(r.max - r.min) + 1;
  return r.min + static_cast<int>(rng.below(span));
}

}  // namespace

core::Result<std::vector<Request>> generate_arrivals(const SyntheticArrivals& spec,
                                                     core::Nanos horizon,
                                                     const core::RandomStreams& streams,
                                                     const std::string& name) {
  if (auto s = validate(spec, horizon, name); !s) return std::unexpected(s.error());
  core::RandomStream gaps = streams.stream(name + "/arrivals");
  core::RandomStream lengths = streams.stream(name + "/lengths");
  const double mean_gap_s = 1.0 / spec.rate_per_s;
  // Gamma(shape k, scale theta) has mean k*theta and cv 1/sqrt(k): k = 1/cv^2 and
  // theta = mean*cv^2 give the requested mean and cv. cv = 1 is the exponential distribution.
  const bool poisson = spec.cv == 1.0;
  const double shape = 1.0 / (spec.cv * spec.cv);
  const double scale = mean_gap_s * spec.cv * spec.cv;
  const double horizon_s = core::to_seconds(horizon);

  std::vector<Request> out;
  out.reserve(static_cast<std::size_t>(spec.rate_per_s * horizon_s * 1.1) + 16);
  // Time is accumulated in seconds as a double and rounded to nanoseconds per request, so
  // rounding never accumulates over a long run.
  double t = 0;
  for (;;) {
    t += poisson ? gaps.exponential(spec.rate_per_s) : gaps.gamma(shape, scale);
    if (t >= horizon_s) break;
    const auto arrival = static_cast<core::Nanos>(std::llround(t * core::kNanosPerSecond));
    if (arrival >= horizon) break;
    if (static_cast<double>(out.size()) >= kMaxSyntheticRequests) {
      return core::failf(core::Domain::kWorkload, core::Code::kResourceExhausted,
                         "arrivals '{}': more than {:.3g} requests before the horizon; lower "
                         "the rate, the cv or the horizon",
                         name, kMaxSyntheticRequests);
    }
    const int input = draw_length(lengths, spec.input_tokens);
    const int output = draw_length(lengths, spec.output_tokens);
    out.push_back(Request{
        .id = out.size(), .arrival = arrival, .input_tokens = input, .output_tokens = output});
  }
  return out;
}

}  // namespace tessera::workload
