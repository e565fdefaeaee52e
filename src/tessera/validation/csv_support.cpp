#include "tessera/validation/csv_support.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <system_error>

namespace tessera::validation::detail {

namespace {

std::string at_line(const std::string& file, const std::exception& e) {
  if (const auto* l = dynamic_cast<const io::error::with_file_line*>(&e); l && l->file_line > 0) {
    return fmt::format("{}:{}", file, l->file_line);
  }
  return file;
}

std::string column_of(const std::exception& e) {
  if (const auto* c = dynamic_cast<const io::error::with_column_name*>(&e)) return c->column_name;
  return {};
}

}  // namespace

core::Error csv_error(const std::string& file, const std::exception& e) {
  const std::string where = at_line(file, e);
  std::string what;
  if (const auto* open = dynamic_cast<const io::error::can_not_open_file*>(&e)) {
    what = open->errno_value != 0
               ? fmt::format("cannot open the file: {}", std::strerror(open->errno_value))
               : std::string("cannot open the file");
    return core::Error(core::Domain::kIo, core::Code::kNotFound,
                       fmt::format("{}: {}", where, what));
  }
  if (dynamic_cast<const io::error::header_missing*>(&e)) {
    what = "no header row (the file is empty)";
  } else if (dynamic_cast<const io::error::extra_column_in_header*>(&e)) {
    what = fmt::format("header: unknown column '{}'", column_of(e));
  } else if (dynamic_cast<const io::error::missing_column_in_header*>(&e)) {
    what = fmt::format("header: missing column '{}'", column_of(e));
  } else if (dynamic_cast<const io::error::duplicated_column_in_header*>(&e)) {
    what = fmt::format("header: column '{}' appears twice", column_of(e));
  } else if (dynamic_cast<const io::error::too_few_columns*>(&e)) {
    what = "fewer cells than the header has columns";
  } else if (dynamic_cast<const io::error::too_many_columns*>(&e)) {
    what = "more cells than the header has columns";
  } else if (dynamic_cast<const io::error::escaped_string_not_closed*>(&e)) {
    what = "a quoted cell is not closed";
  } else if (dynamic_cast<const io::error::line_length_limit_exceeded*>(&e)) {
    what = "the line is longer than 2^24-1 bytes";
  } else {
    what = e.what();
  }
  return core::Error(core::Domain::kIo, core::Code::kParse, fmt::format("{}: {}", where, what));
}

core::Error cell_error(const Cell& at, std::string_view what) {
  return core::Error(core::Domain::kIo, core::Code::kParse,
                     fmt::format("{}:{}: column '{}': {}", at.file, at.line, at.column, what));
}

core::Result<std::int64_t> parse_int(const Cell& at, std::string_view text, std::int64_t minimum) {
  if (text.empty()) return std::unexpected(cell_error(at, "empty; a whole number is required"));
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) {
    return std::unexpected(cell_error(at, fmt::format("'{}' is out of range", text)));
  }
  if (ec != std::errc{} || end != text.data() + text.size()) {
    return std::unexpected(cell_error(at, fmt::format("'{}' is not a whole number", text)));
  }
  if (v < minimum) {
    return std::unexpected(cell_error(at, fmt::format("{} is below the minimum {}", v, minimum)));
  }
  return v;
}

core::Result<int> parse_int32(const Cell& at, std::string_view text, int minimum) {
  auto v = parse_int(at, text, minimum);
  if (!v) return std::unexpected(v.error());
  if (*v > std::numeric_limits<int>::max()) {
    return std::unexpected(cell_error(at, fmt::format("{} is too large", *v)));
  }
  return static_cast<int>(*v);
}

core::Result<bool> parse_bool(const Cell& at, std::string_view text) {
  const std::string t = lower(text);
  if (t == "true" || t == "1") return true;
  if (t == "false" || t == "0") return false;
  return std::unexpected(cell_error(at, fmt::format("'{}' is not True or False", text)));
}

core::Result<std::optional<double>> parse_time_ns(const Cell& at, std::string_view text,
                                                  int ns_exponent) {
  if (text.empty()) return std::unexpected(cell_error(at, "empty; a time is required"));
  const char* first = text.data();
  const char* last = first + text.size();
  double v = 0;
  const auto [end, ec] = std::from_chars(first, last, v);
  if (ec == std::errc::result_out_of_range && end == last) return std::optional<double>{};
  if (ec != std::errc{} || end != last) {
    return std::unexpected(cell_error(at, fmt::format("'{}' is not a number", text)));
  }
  if (!std::isfinite(v) || v <= 0) return std::optional<double>{};

  // Move the decimal point: "1.911" ms -> "1.911e6" ns, "6.9e-18" ms -> "6.9e-12" ns.
  std::string_view mantissa = text;
  int exponent = 0;
  if (const auto e = text.find_first_of("eE"); e != std::string_view::npos) {
    mantissa = text.substr(0, e);
    const std::string_view exp_text = text.substr(e + 1);
    std::from_chars(exp_text.data() + (exp_text.starts_with('+') ? 1 : 0),
                    exp_text.data() + exp_text.size(), exponent);
  }
  const std::string shifted = fmt::format("{}e{}", mantissa, exponent + ns_exponent);
  double ns = 0;
  const auto r = std::from_chars(shifted.data(), shifted.data() + shifted.size(), ns);
  if (r.ec != std::errc{} || !std::isfinite(ns) || ns <= 0) return std::optional<double>{};
  return std::optional<double>{ns};
}

void SkipTally::add(std::string reason, std::int64_t rows) {
  for (Skipped& s : skipped_) {
    if (s.reason == reason) {
      s.rows += rows;
      return;
    }
  }
  skipped_.push_back(Skipped{.source = file_, .reason = std::move(reason), .rows = rows});
}

void SkipTally::append_to(std::vector<Skipped>& out) const {
  out.insert(out.end(), skipped_.begin(), skipped_.end());
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::ranges::transform(out, out.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace tessera::validation::detail
