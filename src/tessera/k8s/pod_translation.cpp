#include "tessera/k8s/pod_translation.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <utility>

#include "tessera/core/try.hpp"
#include "tessera/k8s/extender_types.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;
using U128 = QuantityMantissa;

constexpr U128 kU128Max = ~U128{0};

std::unexpected<core::Error> quantity_error(std::string_view text, std::string_view what) {
  return core::failf(core::Domain::kK8s, core::Code::kParse,
                     "quantity '{}': {} (Kubernetes quantities look like 4, 500m, 1.5, 64Gi, 1G, "
                     "1e3)",
                     text, what);
}

bool mul_checked(U128& v, U128 by) {
  if (v != 0 && by > kU128Max / v) return false;
  v *= by;
  return true;
}

// 10^n, or false when it does not fit.
bool pow10(int n, U128& out) {
  out = 1;
  for (int i = 0; i < n; ++i) {
    if (!mul_checked(out, 10)) return false;
  }
  return true;
}

struct Suffix {
  std::string_view text;
  int exp10;
  int exp2;
};
constexpr std::array<Suffix, 16> kSuffixes{{{"Ki", 0, 10},
                                            {"Mi", 0, 20},
                                            {"Gi", 0, 30},
                                            {"Ti", 0, 40},
                                            {"Pi", 0, 50},
                                            {"Ei", 0, 60},
                                            {"n", -9, 0},
                                            {"u", -6, 0},
                                            {"m", -3, 0},
                                            {"", 0, 0},
                                            {"k", 3, 0},
                                            {"M", 6, 0},
                                            {"G", 9, 0},
                                            {"T", 12, 0},
                                            {"P", 15, 0},
                                            {"E", 18, 0}}};

std::unexpected<core::Error> field_error(const std::string& path, std::string_view what) {
  return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument, "pod {}: {}", path, what);
}

const json* member(const json& obj, std::string_view key) {
  const json* m = find_member(obj, key);
  return (m && !m->is_null()) ? m : nullptr;
}

// A quantity as the API sends it: a string, or (Quantity.UnmarshalJSON accepts it) a bare number.
core::Result<Quantity> quantity_at(const json& v, const std::string& path) {
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
  } else if (v.is_number_integer() || v.is_number_float()) {
    text = v.dump();
  } else {
    return field_error(path, fmt::format("expected a quantity string, got {}", json_type_name(v)));
  }
  auto q = parse_quantity(text);
  if (!q) return std::unexpected(q.error().with_context("pod " + path));
  if (q->negative && q->mantissa != 0) return field_error(path, "must not be negative");
  return q;
}

// cpu in millicores (MilliValue), memory in bytes (Value), both rounded up: how requests and
// limits are compared for the QoS class.
core::Result<std::int64_t> qos_units(Quantity q, std::string_view resource) {
  if (resource == "cpu") q.exp10 += 3;
  return quantity_ceil(q);
}

struct ContainerResources {
  std::int64_t gpus = 0;
  std::int64_t cpu_milli = 0;  // summed exactly in millicores, rounded up to cores at the end
  std::int64_t memory = 0;
  // For Kubernetes' QoS class: cpu (millicores) and memory (bytes) requests and limits; -1 = not
  // set.
  std::int64_t cpu_request = -1, cpu_limit = -1, memory_request = -1, memory_limit = -1;
};

core::Result<ContainerResources> container_resources(const json& c, const std::string& path) {
  if (!c.is_object()) {
    return field_error(path, fmt::format("expected a container object, got {}", json_type_name(c)));
  }
  ContainerResources out;
  const json* res = member(c, "resources");
  if (!res) return out;
  if (!res->is_object()) {
    return field_error(path + ".resources",
                       fmt::format("expected an object, got {}", json_type_name(*res)));
  }
  const json* requests = member(*res, "requests");
  const json* limits = member(*res, "limits");
  for (auto [m, name] : {std::pair{requests, "requests"}, std::pair{limits, "limits"}}) {
    if (m && !m->is_object()) {
      return field_error(fmt::format("{}.resources.{}", path, name),
                         fmt::format("expected a map of quantities, got {}", json_type_name(*m)));
    }
  }
  // Resource names are map keys, compared exactly (Kubernetes' resource names are).
  auto lookup = [&](const json* m, const char* key) -> const json* {
    if (!m) return nullptr;
    auto it = m->find(key);
    return (it == m->end() || it->is_null()) ? nullptr : &*it;
  };
  auto value = [&](const char* key, const std::string& rpath, const char* which,
                   std::int64_t& nano) -> core::Result<std::optional<Quantity>> {
    const json* v = lookup(which[0] == 'r' ? requests : limits, key);
    if (!v) return std::optional<Quantity>{};
    TESSERA_ASSIGN_OR_RETURN(auto q, quantity_at(*v, fmt::format("{}.{}.{}", rpath, which, key)));
    auto units = qos_units(q, key);
    if (!units) {
      return std::unexpected(
          units.error().with_context(fmt::format("pod {}.{}.{}", rpath, which, key)));
    }
    nano = *units;
    return std::optional<Quantity>(q);
  };
  const std::string rpath = path + ".resources";
  for (const char* key : {"nvidia.com/gpu", "cpu", "memory"}) {
    std::int64_t nano_req = -1, nano_lim = -1;
    TESSERA_ASSIGN_OR_RETURN(auto req, value(key, rpath, "requests", nano_req));
    TESSERA_ASSIGN_OR_RETURN(auto lim, value(key, rpath, "limits", nano_lim));
    const bool from_request = req.has_value();
    const std::optional<Quantity>& q = from_request ? req : lim;
    const std::string qpath =
        fmt::format("{}.{}.{}", rpath, from_request ? "requests" : "limits", key);
    std::int64_t amount = 0;
    if (q) {
      Quantity scaled = *q;
      if (std::string_view(key) == "cpu") scaled.exp10 += 3;  // millicores, as MilliValue()
      auto v = quantity_ceil(scaled);
      if (!v) return std::unexpected(v.error().with_context("pod " + qpath));
      amount = *v;
    }
    const std::string k = key;
    if (k == "nvidia.com/gpu") {
      if (q && !quantity_is_integer(*q)) {
        return field_error(qpath, "GPUs are an extended resource and must be a whole number");
      }
      out.gpus = amount;
    } else if (k == "cpu") {
      out.cpu_milli = amount;
      out.cpu_request = from_request ? nano_req : nano_lim;
      out.cpu_limit = nano_lim;
    } else {
      out.memory = amount;
      out.memory_request = from_request ? nano_req : nano_lim;
      out.memory_limit = nano_lim;
    }
  }
  return out;
}

core::Result<std::vector<ContainerResources>> containers(const json& spec, std::string_view key) {
  std::vector<ContainerResources> out;
  const json* list = member(spec, key);
  if (!list) return out;
  const std::string path = fmt::format("spec.{}", key);
  if (!list->is_array()) {
    return field_error(path, fmt::format("expected an array, got {}", json_type_name(*list)));
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(auto r,
                             container_resources((*list)[i], fmt::format("{}[{}]", path, i)));
    out.push_back(r);
  }
  return out;
}

core::Result<std::int64_t> checked_sum(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t s = 0;
  if (__builtin_add_overflow(a, b, &s)) {
    return field_error("spec.containers", fmt::format("the summed {} request overflows", what));
  }
  return s;
}

// Kubernetes' QoS class is Guaranteed when every container sets cpu and memory limits and its
// requests equal them (k8s.io/kubernetes pkg/apis/core/v1/helper/qos: GetPodQOS).
bool kubernetes_guaranteed(const std::vector<ContainerResources>& all) {
  if (all.empty()) return false;
  for (const auto& c : all) {
    if (c.cpu_limit < 0 || c.memory_limit < 0) return false;
    if (c.cpu_request != c.cpu_limit || c.memory_request != c.memory_limit) return false;
  }
  return true;
}

core::Result<std::string> string_at(const json& obj, std::string_view key,
                                    const std::string& path) {
  const json* m = member(obj, key);
  if (!m) return std::string{};
  if (!m->is_string()) {
    return field_error(path, fmt::format("expected a string, got {}", json_type_name(*m)));
  }
  return m->get<std::string>();
}

}  // namespace

core::Result<Quantity> parse_quantity(std::string_view text) {
  if (text.empty()) return quantity_error(text, "empty");
  Quantity q;
  std::size_t i = 0;
  if (text[i] == '+' || text[i] == '-') {
    q.negative = text[i] == '-';
    ++i;
  }
  int digits = 0, fraction = 0;
  bool seen_point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (seen_point) return quantity_error(text, "more than one decimal point");
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    ++digits;
    if (seen_point) ++fraction;
    if (q.mantissa == 0 && c == '0') continue;  // leading zeros carry nothing
    if (!mul_checked(q.mantissa, 10) || q.mantissa > kU128Max - static_cast<unsigned>(c - '0')) {
      return quantity_error(text, "too many significant digits");
    }
    q.mantissa += static_cast<unsigned>(c - '0');
  }
  if (digits == 0) return quantity_error(text, "no digits before the suffix");
  q.exp10 = -fraction;
  const std::string_view suffix = text.substr(i);
  for (const auto& s : kSuffixes) {
    if (s.text == suffix) {
      q.exp10 += s.exp10;
      q.exp2 = s.exp2;
      return q;
    }
  }
  // e/E followed by an integer is a decimal exponent (a bare E is exa, Ei exbi: matched above).
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::size_t j = 1;
    bool neg = false;
    if (suffix[j] == '+' || suffix[j] == '-') neg = suffix[j++] == '-';
    if (j == suffix.size()) return quantity_error(text, "exponent without digits");
    int e = 0;
    for (; j < suffix.size(); ++j) {
      if (suffix[j] < '0' || suffix[j] > '9') {
        return quantity_error(text, fmt::format("unknown suffix '{}'", suffix));
      }
      e = e * 10 + (suffix[j] - '0');
      if (e > 1000) return quantity_error(text, "exponent out of range");
    }
    q.exp10 += neg ? -e : e;
    return q;
  }
  return quantity_error(text, fmt::format("unknown suffix '{}' (binary Ki Mi Gi Ti Pi Ei, decimal "
                                          "n u m k M G T P E, or an exponent e3)",
                                          suffix));
}

core::Result<std::int64_t> quantity_ceil(const Quantity& q) {
  constexpr auto kMax = static_cast<U128>(std::numeric_limits<std::int64_t>::max());
  auto too_large = [] {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "quantity too large for a 64-bit integer");
  };
  if (q.mantissa == 0) return std::int64_t{0};
  U128 num = q.mantissa;
  for (int i = 0; i < q.exp2; ++i) {
    if (!mul_checked(num, 2)) return too_large();
  }
  U128 value = 0;
  if (q.exp10 >= 0) {
    U128 scale = 0;
    if (!pow10(q.exp10, scale) || !mul_checked(num, scale)) return too_large();
    value = num;
  } else {
    U128 den = 0;
    // A denominator past 128 bits exceeds any numerator: the value is in (0, 1).
    if (!pow10(-q.exp10, den)) {
      value = 1;
    } else {
      value = num / den;
      const bool exact = num % den == 0;
      // Ceiling for positive values, truncation toward zero (also the ceiling) for negative.
      if (!exact && !q.negative) ++value;
    }
  }
  if (value > kMax) return too_large();
  const auto v = static_cast<std::int64_t>(value);
  return q.negative ? -v : v;
}

bool quantity_is_integer(const Quantity& q) {
  if (q.mantissa == 0 || q.exp10 >= 0) return true;
  U128 num = q.mantissa;
  for (int i = 0; i < q.exp2; ++i) {
    if (!mul_checked(num, 2)) return true;  // a 2^128-sized value of a fractional decimal: integer
  }
  U128 den = 0;
  if (!pow10(-q.exp10, den)) return false;
  return num % den == 0;
}

core::Result<cluster::Pod> translate_pod(const json& pod) {
  if (!pod.is_object()) {
    return field_error("object",
                       fmt::format("expected a v1.Pod object, got {}", json_type_name(pod)));
  }
  cluster::Pod out;
  const json* meta = member(pod, "metadata");
  if (!meta || !meta->is_object()) return field_error("metadata", "missing or not an object");
  TESSERA_ASSIGN_OR_RETURN(auto name, string_at(*meta, "name", "metadata.name"));
  if (name.empty()) return field_error("metadata.name", "missing or empty");
  TESSERA_ASSIGN_OR_RETURN(auto ns, string_at(*meta, "namespace", "metadata.namespace"));
  if (ns.empty()) ns = "default";
  out.name = ns + "/" + name;
  TESSERA_ASSIGN_OR_RETURN(out.uid, string_at(*meta, "uid", "metadata.uid"));

  const json* spec = member(pod, "spec");
  if (spec && !spec->is_object()) {
    return field_error("spec", fmt::format("expected an object, got {}", json_type_name(*spec)));
  }
  const json empty = json::object();
  const json& s = spec ? *spec : empty;
  if (const json* p = member(s, "priority")) {
    if (!p->is_number_integer() ||
        p->get<std::int64_t>() < std::numeric_limits<std::int32_t>::min() ||
        p->get<std::int64_t>() > std::numeric_limits<std::int32_t>::max()) {
      return field_error("spec.priority",
                         fmt::format("expected a 32-bit integer, got {}", p->dump()));
    }
    out.priority = p->get<std::int32_t>();
  }

  TESSERA_ASSIGN_OR_RETURN(auto main, containers(s, "containers"));
  TESSERA_ASSIGN_OR_RETURN(auto init, containers(s, "initContainers"));
  ContainerResources sum;
  for (const auto& c : main) {
    TESSERA_ASSIGN_OR_RETURN(sum.gpus, checked_sum(sum.gpus, c.gpus, "GPU"));
    TESSERA_ASSIGN_OR_RETURN(sum.cpu_milli, checked_sum(sum.cpu_milli, c.cpu_milli, "CPU"));
    TESSERA_ASSIGN_OR_RETURN(sum.memory, checked_sum(sum.memory, c.memory, "memory"));
  }
  for (const auto& c : init) {
    sum.gpus = std::max(sum.gpus, c.gpus);
    sum.cpu_milli = std::max(sum.cpu_milli, c.cpu_milli);
    sum.memory = std::max(sum.memory, c.memory);
  }
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  if (sum.gpus > kIntMax) return field_error("spec.containers", "the GPU request is too large");
  const std::int64_t cores = sum.cpu_milli / 1000 + (sum.cpu_milli % 1000 != 0 ? 1 : 0);
  if (cores > kIntMax) return field_error("spec.containers", "the CPU request is too large");
  out.request.gpus = static_cast<int>(sum.gpus);
  out.request.cpus = static_cast<int>(cores);
  out.request.memory_bytes = sum.memory;

  const json* annotations = member(*meta, "annotations");
  if (annotations && !annotations->is_object()) {
    return field_error("metadata.annotations", fmt::format("expected a map of strings, got {}",
                                                           json_type_name(*annotations)));
  }
  auto annotation = [&](std::string_view key) -> core::Result<std::optional<std::string>> {
    if (!annotations) return std::optional<std::string>{};
    auto it = annotations->find(key);
    if (it == annotations->end() || it->is_null()) return std::optional<std::string>{};
    if (!it->is_string()) {
      return field_error(fmt::format("metadata.annotations[{}]", key),
                         fmt::format("expected a string, got {}", json_type_name(*it)));
    }
    return std::optional<std::string>(it->get<std::string>());
  };

  TESSERA_ASSIGN_OR_RETURN(auto qos, annotation(kQosAnnotation));
  if (qos) {
    auto parsed = cluster::parse_qos(*qos);
    if (!parsed) {
      return field_error(fmt::format("metadata.annotations[{}]", kQosAnnotation),
                         parsed.error().message());
    }
    out.qos = *parsed;
  } else {
    std::string klass;
    if (const json* status = member(pod, "status"); status && status->is_object()) {
      TESSERA_ASSIGN_OR_RETURN(klass, string_at(*status, "qosClass", "status.qosClass"));
    }
    std::vector<ContainerResources> all = main;
    all.insert(all.end(), init.begin(), init.end());
    const bool guaranteed = klass.empty() ? kubernetes_guaranteed(all) : klass == "Guaranteed";
    out.qos = guaranteed ? cluster::Qos::kGuaranteed : cluster::Qos::kBestEffort;
  }

  TESSERA_ASSIGN_OR_RETURN(auto topology, annotation(kTopologyAnnotation));
  if (topology) {
    auto parsed = cluster::parse_topology_requirement(*topology);
    if (!parsed) {
      return field_error(fmt::format("metadata.annotations[{}]", kTopologyAnnotation),
                         parsed.error().message());
    }
    out.topology = *parsed;
  }
  return out;
}

}  // namespace tessera::k8s
