#include "tessera/gpu/modes/lithos/lithos_options.hpp"

#include <fmt/format.h>

namespace tessera::gpu {

const std::vector<OptionField<LithosOptions>>& lithos_option_fields() {
  static const std::vector<OptionField<LithosOptions>> fields = {
      duration_option(
          "atom_duration", &LithosOptions::atom_duration,
          {.meaning = "target length of one atom of a split kernel: the longest a high-priority "
                      "kernel waits for a best-effort atom on its TPCs",
           .basis = "LithOS does not report its value; an assumption"},
          +[](core::Nanos v) {
            return std::string(v > 0 ? ""
                                     : "must be > 0 (the target length of one atom, e.g. 250us)");
          }),
      switch_option("right_sizing", &LithosOptions::right_sizing,
                    {.meaning = "give each kernel the fewest TPCs within latency_slip",
                     .basis = "LithOS's right-sizing, evaluated in its §7.2"}),
      switch_option("dvfs", &LithosOptions::dvfs,
                    {.meaning = "lower the clock where latency_slip allows",
                     .basis = "LithOS's DVFS, evaluated in its §7.3"}),
      number_option(
          "latency_slip", &LithosOptions::latency_slip,
          {.meaning = "the fraction right-sizing and DVFS may make a kernel slower, "
                      "in [0, 1]",
           .basis = "LithOS evaluates 1.1x"},
          +[](double slip) {
            if (slip >= 0 && slip <= 1) return std::string();
            return fmt::format(
                "latency_slip is the fraction a kernel may slow down, in [0, 1] (0.1 "
                "allows 1.1x), got {}",
                slip);
          }),
  };
  return fields;
}

}  // namespace tessera::gpu
