#pragma once
// The simulator against a set of measurements: each row's simulated time and relative error,
// and per category the median and P90 of |error| and the worst rows.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/validation/measurement.hpp"
#include "tessera/validation/predict.hpp"

namespace tessera::validation {

struct RowResult {
  Measurement measurement;
  std::string category;
  double simulated_ns = 0;
  double error = 0;     // (simulated - measured) / measured
  bool fitted = false;  // the calibration was fitted on this row (split.hpp)
};

// The error over the rows the calibration was not fitted on, and apart from it over those it was.
struct CategoryStats {
  std::string category;
  std::size_t rows = 0;         // not fitted on
  double median_abs_error = 0;  // nearest rank, so always one row's error
  double p90_abs_error = 0;
  double median_error = 0;  // signed: which way the model leans
  std::size_t fitted_rows = 0;
  double fitted_median_abs_error = 0;
  double fitted_p90_abs_error = 0;
  std::vector<std::size_t> worst;  // indices into ValidationReport::rows, worst first (not fitted)
};

// The same per category, source (the profile's top directory, or the file) and GPU, over the rows
// not fitted on: sources disagree (two H100 software stacks differ by 10-20% on one GEMM shape),
// and a category's figure hides which one it comes from.
struct SourceStats {
  std::string category;
  std::string source;
  std::string gpu;
  std::size_t rows = 0;
  double median_abs_error = 0;
  double p90_abs_error = 0;
  double median_error = 0;
};

struct ValidationReport {
  std::vector<RowResult> rows;
  std::vector<CategoryStats> categories;  // sorted by name
  std::vector<SourceStats> sources;       // sorted by category, source, GPU
  std::vector<Skipped> skipped;           // the readers' and the predictor's
};

// Called every so many rows with (done, total).
using ValidateProgress = std::function<void(std::size_t, std::size_t)>;

// Runs every row of `set`; rows the predictor cannot rebuild are added to `skipped`, grouped by
// file and reason. `worst` rows are kept per category.
core::Result<ValidationReport> validate(MeasurementSet set, Predictor& predictor,
                                        std::size_t worst = 5,
                                        const ValidateProgress& progress = {});

// The table: per category rows, median and P90 of |error|, signed median; then each category's
// worst rows with their source; then what was skipped.
// A row's configuration in a few words ("bf16 m=16 n=4096 k=4096"), as the worst-rows table,
// the CSV and the HTML page give it.
std::string describe(const Measurement& m);

std::string format_report(const ValidationReport& report);
// One line per row: source, gpu, category, the configuration, measured and simulated us, error.
std::string to_csv(const ValidationReport& report);

}  // namespace tessera::validation
