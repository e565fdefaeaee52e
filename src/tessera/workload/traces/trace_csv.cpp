// Replay of request traces in the Azure LLM inference trace format
// (github.com/Azure/AzurePublicDataset, AzureLLMInferenceDataset2023.md):
// TIMESTAMP,ContextTokens,GeneratedTokens with timestamps like "2023-11-16 18:17:03.9799600".

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <climits>
#include <cmath>
#include <expected>
#include <limits>
#include <optional>

#include "tessera/core/file_read.hpp"
#include "tessera/workload/arrivals.hpp"
#include "tessera/workload/traces/trace_rows.hpp"

namespace tessera::workload {

namespace {

constexpr std::string_view kTimestamp = "TIMESTAMP";
constexpr std::string_view kContext = "ContextTokens";
constexpr std::string_view kGenerated = "GeneratedTokens";
constexpr std::string_view kTimestampFormat = "YYYY-MM-DD HH:MM:SS[.fffffff]";

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return std::ranges::equal(
      a, b, [](unsigned char x, unsigned char y) { return std::tolower(x) == std::tolower(y); });
}

// Splits on commas; fields are trimmed. The format has no quoting.
std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(trim(line.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

std::optional<int> digits(std::string_view s, std::size_t pos, std::size_t count) {
  if (pos + count > s.size()) return std::nullopt;
  int value = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
    value = value * 10 + (s[i] - '0');
  }
  return value;
}

enum class TimestampError { kMalformed, kOutOfRange };

// Nanoseconds since 1970 fill an int64 until 2262-04-11 23:47:16.854775807; times before 1970 are
// refused too, so that the offset between any two rows fits as well.
constexpr std::string_view kTimestampRange = "1970-01-01 to 2262-04-11";

// "YYYY-MM-DD HH:MM:SS" plus an optional fraction of 1-9 digits, as nanoseconds since the Unix
// epoch (UTC; only differences are used).
std::expected<core::Nanos, TimestampError> parse_timestamp(std::string_view s) {
  const auto malformed = std::unexpected(TimestampError::kMalformed);
  const auto year = digits(s, 0, 4);
  const auto month = digits(s, 5, 2);
  const auto day = digits(s, 8, 2);
  const auto hour = digits(s, 11, 2);
  const auto minute = digits(s, 14, 2);
  const auto second = digits(s, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return malformed;
  if (s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' ||
      s[16] != ':') {
    return malformed;
  }
  const std::chrono::year_month_day date{std::chrono::year{*year},
                                         std::chrono::month{static_cast<unsigned>(*month)},
                                         std::chrono::day{static_cast<unsigned>(*day)}};
  if (!date.ok() || *hour > 23 || *minute > 59 || *second > 59) return malformed;
  core::Nanos fraction = 0;
  if (s.size() > 19) {
    const std::string_view frac = s.substr(20);
    if (s[19] != '.' || frac.empty() || frac.size() > 9) return malformed;
    const auto value = digits(frac, 0, frac.size());
    if (!value) return malformed;
    fraction = *value;
    for (std::size_t i = frac.size(); i < 9; ++i) fraction *= 10;
  }
  const std::int64_t days = std::chrono::sys_days{date}.time_since_epoch().count();
  const std::int64_t secs = ((days * 24 + *hour) * 60 + *minute) * 60 + *second;
  if (secs < 0 ||
      secs > (std::numeric_limits<core::Nanos>::max() - fraction) / core::kNanosPerSecond) {
    return std::unexpected(TimestampError::kOutOfRange);
  }
  return secs * core::kNanosPerSecond + fraction;
}

struct Columns {
  std::size_t count;
  std::size_t timestamp;
  std::size_t context;
  std::size_t generated;
};

class Parser {
 public:
  explicit Parser(const std::string& source) : source_(source) {}

  core::Error error(int line, std::string_view what) const {
    return core::Error(core::Domain::kWorkload, core::Code::kParse,
                       fmt::format("{}:{}: {}", source_, line, what));
  }

  core::Result<Columns> header(std::string_view line, int line_no) const {
    const auto fields = split_fields(line);
    std::array<std::optional<std::size_t>, 3> found;
    const std::array<std::string_view, 3> names = {kTimestamp, kContext, kGenerated};
    for (std::size_t i = 0; i < fields.size(); ++i) {
      for (std::size_t n = 0; n < names.size(); ++n) {
        if (iequals(fields[i], names[n]) && !found[n]) found[n] = i;
      }
    }
    for (std::size_t n = 0; n < names.size(); ++n) {
      if (!found[n]) {
        return std::unexpected(
            error(line_no, fmt::format("header has no {} column (found '{}'); an Azure LLM trace "
                                       "starts with the header {},{},{}",
                                       names[n], trim(line), kTimestamp, kContext, kGenerated)));
      }
    }
    return Columns{fields.size(), *found[0], *found[1], *found[2]};
  }

  core::Result<int> tokens(std::string_view field, std::string_view column, int line_no) const {
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (field.empty() || ec != std::errc() || end != field.data() + field.size()) {
      return std::unexpected(error(
          line_no,
          fmt::format("column {}: expected a whole number of tokens, got '{}'", column, field)));
    }
    if (value < 0) {
      return std::unexpected(
          error(line_no,
                fmt::format("column {}: token count must not be negative, got {}", column, value)));
    }
    if (value > INT_MAX) {
      return std::unexpected(error(
          line_no,
          fmt::format("column {}: token count {} is larger than {}", column, value, INT_MAX)));
    }
    // 0 reads as 1: see load_trace_csv in arrivals.hpp.
    return std::max(static_cast<int>(value), 1);
  }

 private:
  const std::string& source_;
};

}  // namespace

core::Result<std::vector<Request>> parse_trace_csv(std::string_view text,
                                                   const std::string& source_name,
                                                   const TraceOptions& options) {
  if (auto s = check_trace_options(options, source_name); !s) return std::unexpected(s.error());
  const Parser parser(source_name);
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte-order mark

  std::optional<Columns> columns;
  std::vector<TraceRow> rows;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (trim(line).empty()) continue;
    if (!columns) {
      auto h = parser.header(line, line_no);
      if (!h) return std::unexpected(h.error());
      columns = *h;
      continue;
    }
    const auto fields = split_fields(line);
    if (fields.size() != columns->count) {
      return std::unexpected(parser.error(
          line_no, fmt::format("expected {} comma-separated columns as in the header, got {}",
                               columns->count, fields.size())));
    }
    const std::string_view ts = fields[columns->timestamp];
    const auto time = parse_timestamp(ts);
    if (!time && time.error() == TimestampError::kOutOfRange) {
      return std::unexpected(parser.error(
          line_no, fmt::format("column {}: '{}' is outside {}, the span a trace time can have "
                               "(nanoseconds since 1970 in 64 bits)",
                               kTimestamp, ts, kTimestampRange)));
    }
    if (!time) {
      return std::unexpected(
          parser.error(line_no, fmt::format("column {}: expected a time like '{}', got '{}'",
                                            kTimestamp, kTimestampFormat, ts)));
    }
    if (!rows.empty() && *time < rows.back().time) {
      return std::unexpected(parser.error(
          line_no, fmt::format("column {}: '{}' is earlier than the row before it; the trace "
                               "must be sorted by time",
                               kTimestamp, ts)));
    }
    auto input = parser.tokens(fields[columns->context], kContext, line_no);
    if (!input) return std::unexpected(input.error());
    auto output = parser.tokens(fields[columns->generated], kGenerated, line_no);
    if (!output) return std::unexpected(output.error());
    rows.push_back(TraceRow{*time, *input, *output});
  }
  if (!columns) {
    return core::failf(core::Domain::kWorkload, core::Code::kParse,
                       "{}: the file is empty; an Azure LLM trace starts with the header {},{},{}",
                       source_name, kTimestamp, kContext, kGenerated);
  }
  if (rows.empty()) {
    return core::failf(core::Domain::kWorkload, core::Code::kParse,
                       "{}: no request rows after the header", source_name);
  }

  return requests_from_rows(rows, options);
}

core::Result<std::vector<Request>> load_trace_csv(const std::string& path,
                                                  const TraceOptions& options) {
  auto text = core::read_file(
      path,
      {.what = "trace file", .domain = core::Domain::kWorkload, .max_bytes = core::kMaxTableBytes});
  if (!text) return std::unexpected(text.error());
  return parse_trace_csv(*text, path, options);
}

}  // namespace tessera::workload
