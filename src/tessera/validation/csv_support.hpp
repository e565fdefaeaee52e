#pragma once
// What the measurement readers share (internal to tessera_validation): fast-cpp-csv-parser
// (Debian's libfccp-dev, <csv.h>) for splitting rows and matching header names, its exceptions
// turned into core::Error at the reader boundary, and cell parsers whose errors read
// "FILE:LINE: column 'x': what is wrong". Cells are read as text and converted here
// (std::from_chars) rather than by fccp, whose own float parser rounds inexactly and accepts an
// empty cell as 0.
//
// tessera_fccp defines CSV_IO_NO_THREAD: fccp then reads on the calling thread, and every
// translation unit sees the same io::LineReader.

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/internal/fccp.hpp"
#include "tessera/validation/measurement.hpp"

namespace tessera::validation::detail {

// Profiles: blank lines ignored. The measurement schema also has '#' comment lines.
template <unsigned N>
using ProfileReader = io::CSVReader<N, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>,
                                    io::throw_on_overflow, io::empty_line_comment>;
template <unsigned N>
using CommentedReader =
    io::CSVReader<N, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>,
                  io::throw_on_overflow, io::single_and_empty_line_comment<'#'>>;

// An exception from fccp (or the standard library) as "FILE[:LINE]: what" in the kIo domain;
// FILE is the name the caller shows (a path under perf_profiles/, or the path as given).
core::Error csv_error(const std::string& file, const std::exception& e);

// Runs BODY (returning a Result) and turns any exception it throws into that Result's error.
template <typename Body>
auto guard_csv(const std::string& file, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    return std::unexpected(csv_error(file, e));
  } catch (...) {
    return core::fail(core::Domain::kIo, core::Code::kInternal,
                      fmt::format("{}: unknown exception while reading", file));
  }
}

// Where a cell is, for its error.
struct Cell {
  const std::string& file;
  unsigned line;
  std::string_view column;
};
core::Error cell_error(const Cell& at, std::string_view what);

// A whole number >= minimum (an empty cell is an error).
core::Result<std::int64_t> parse_int(const Cell& at, std::string_view text, std::int64_t minimum);
core::Result<int> parse_int32(const Cell& at, std::string_view text, int minimum);
// True/False, true/false, 1/0.
core::Result<bool> parse_bool(const Cell& at, std::string_view text);

// A time: text a decimal number in a unit of 10^unit_exponent seconds-ish, returned in ns as the
// double nearest to the decimal value (the decimal point moved, not a multiplication, so
// "1.911" ms is exactly 1911000 ns). nullopt when the number is NaN, infinite, zero or negative
// (the caller skips the row); an error when the text is not a number at all.
core::Result<std::optional<double>> parse_time_ns(const Cell& at, std::string_view text,
                                                  int ns_exponent);

// Counts skipped rows per reason, in the order the reasons first appear.
class SkipTally {
 public:
  explicit SkipTally(std::string file) : file_(std::move(file)) {}
  void add(std::string reason, std::int64_t rows = 1);
  void append_to(std::vector<Skipped>& out) const;

 private:
  std::string file_;
  std::vector<Skipped> skipped_;
};

// Lowercased copy.
std::string lower(std::string_view s);

}  // namespace tessera::validation::detail
