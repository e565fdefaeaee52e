#pragma once
// Every experiment `tessera experiment NAME` runs, in one list (registry.cpp): the scenario studies
// (LithOS, CoGPU: the sharing modes side by side on one simulated GPU), the MIG studies (MIGM:
// batch jobs on a simulated MIG GPU) and the cluster studies (FlexTopo: the cluster simulator).
// The listing, the lookups, the "unknown experiment" error and the CLI all come from this list.

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/experiment/experiment.hpp"
#include "tessera/experiment/flextopo_study.hpp"
#include "tessera/experiment/mig_studies.hpp"

namespace tessera::experiment {

// What an experiment runs, by level: each kind keeps its own runner and result.
using Study = std::variant<Experiment, MigExperiment, FlextopoExperiment>;

// Each kind's name, for messages: "scenario study", "MIG study", "cluster study".
template <class T>
constexpr std::string_view study_kind();
template <>
constexpr std::string_view study_kind<Experiment>() {
  return "scenario study";
}
template <>
constexpr std::string_view study_kind<MigExperiment>() {
  return "MIG study";
}
template <>
constexpr std::string_view study_kind<FlextopoExperiment>() {
  return "cluster study";
}

struct ExperimentEntry {
  Study study;

  const std::string& name() const;
  const std::string& paper() const;
  const std::string& figure() const;
  std::string_view kind() const;
  // The study if it is of kind T (Experiment, MigExperiment or FlextopoExperiment), else nullptr.
  template <class T>
  const T* as() const {
    return std::get_if<T>(&study);
  }
};

// The one list, in the order `tessera experiment --list` shows it.
const std::vector<ExperimentEntry>& experiments();

// The `frontier` study on a scenario file of the user's (`tessera experiment frontier --scenario
// FILE`): its most important latency-critical tenant with a latency target against its first
// best-effort tenant (a trainer where it has one). Fails, naming what is missing, where the file
// has no such pair.
core::Result<Experiment> frontier_on_file(const std::string& path);
// Every experiment's name, comma-separated, for messages.
std::string experiment_names();
// Unknown names get an error listing every known one.
core::Result<const ExperimentEntry*> find_experiment(std::string_view name);
// The same for an experiment of kind T; a known name of another kind is an error saying so.
template <class T>
core::Result<const T*> find_study(std::string_view name) {
  auto entry = find_experiment(name);
  if (!entry) return std::unexpected(entry.error());
  if (const T* study = (*entry)->template as<T>()) return study;
  return core::failf(core::Domain::kScenario, core::Code::kInvalidArgument,
                     "experiment '{}' is a {}, not a {}", name, (*entry)->kind(), study_kind<T>());
}

}  // namespace tessera::experiment
