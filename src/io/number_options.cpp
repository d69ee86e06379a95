#include <moeplan/io/number_options.hpp>

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/size_bounds.hpp>

namespace moeplan::io {
namespace {

constexpr double kPow2(int k) { return static_cast<double>(std::int64_t{1} << k); }
constexpr double as_bound(std::int64_t v) { return static_cast<double>(v); }

// Why a bound is what it is, when several options share it.
constexpr std::string_view kParallelWhy = "the scenario format's bound on any parallel size (model/size_bounds.hpp)";

const std::vector<NumberOption> kOptions = {
    // cost
    {"request.size", false, 0, false, 1e18, "FLOPs or bytes",
     "far above one kernel or collective: 1e18 FLOPs is 17 minutes of a GPU at 1 PFLOP/s"},
    {"request.group", true, 1, false, as_bound(model::kMaxParallel), "ranks", kParallelWhy},
    {"request.ranks_per_node", true, 1, false, as_bound(model::kMaxGpusPerNode), "ranks",
     "the scenario format's bound on GPUs per node"},
    {"request.concurrent", true, 1, false, as_bound(model::kMaxParallel), "groups", kParallelWhy},
    // mappings
    {"request.world", true, 1, false, as_bound(model::kMaxParallel), "GPUs", kParallelWhy},
    {"request.tp", true, 1, false, as_bound(model::kMaxParallel), "", kParallelWhy},
    {"request.cp", true, 1, false, as_bound(model::kMaxParallel), "", kParallelWhy},
    {"request.pp", true, 1, false, as_bound(model::kMaxParallel), "", kParallelWhy},
    {"request.ep", true, 1, false, as_bound(model::kMaxParallel), "", kParallelWhy},
    {"request.etp", true, 1, false, as_bound(model::kMaxParallel), "", kParallelWhy},
    {"request.vpp", true, 1, false, as_bound(model::kMaxLayers), "",
     "a virtual stage holds at least one layer: the scenario format's bound on layers"},
    {"request.gpus_per_node", true, 1, false, as_bound(model::kMaxGpusPerNode), "GPUs",
     "the scenario format's bound on GPUs per node"},
    // simulate, plan, sweep, execute, export-chakra, report
    {"request.degree", true, 1, false, as_bound(model::kMaxDegree), "", "the scenario format's bound on a degree"},
    {"request.threads", true, 1, false, kPow2(20), "threads",
     "more than the machine's hardware threads are capped at the machine's (and said); 2^20 bounds the number read"},
    {"request.max_memory", false, 0.001, false, 1048576, "GiB",
     "1 MiB to 1 PiB: any machine, and the bytes fit in 64 bits"},
    {"request.max_points", true, 1, false, kPow2(32), "points",
     "a sweep's points are made one at a time; 2^32 points would run for years"},
    {"request.iterations", true, 1, false, 10000, "iterations", "10,000 measured iterations of a plan take hours"},
    {"request.warmup", true, 0, false, 10000, "iterations", "as the measured iterations'"},
    // capacity
    {"request.tokens", false, 1, false, 1e18, "tokens",
     "about 28,000x the 36T tokens Qwen3 was pretrained on; a budget is at least one token"},
    {"request.days", false, 0, true, 1e5, "days", "100,000 days: 274 years"},
    {"request.cost_per_gpu_hour", false, 0, true, 1e6, "per GPU-hour", "far above any price of a GPU-hour"},
    {"request.gpus", true, 1, false, as_bound(model::kMaxParallel), "GPUs",
     "the scenario format's bound on a world of GPUs (model/size_bounds.hpp)"},
    {"request.seq_len", true, 1, false, as_bound(model::kMaxSeq), "tokens",
     "the scenario format's bound on a sequence"},
    {"request.global_batch", true, 1, false, kPow2(16), "sequences",
     "4x DeepSeek-V3's batch of 15,360 sequences; each count's search simulates every mapping's pipeline over "
     "global batch / dp micro-batches, in time linear in them (16,384 sequences on 16 GPUs: 6 s a count on the "
     "development machine), so 2^16 keeps a count within a minute"},
};

// A bound as text: whole numbers whole, others in shortest form.
std::string number_text(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e16) return fmt::format("{}", static_cast<std::int64_t>(v));
  return fmt::format("{}", v);
}

std::string with_unit(double v, std::string_view unit) {
  if (unit.empty()) return number_text(v);
  // "1 token", "2 tokens": a one-word plural unit loses its s at exactly one.
  if (v == 1 && unit.size() > 1 && unit.back() == 's' && unit.find(' ') == std::string_view::npos)
    unit.remove_suffix(1);
  return fmt::format("{} {}", number_text(v), unit);
}

// The whole text is a decimal number: [+-] digits [. digits] [(e|E) [+-] digits],
// at least one digit before the exponent; for an integer, [+-] digits only.
bool decimal_syntax(std::string_view t, bool integer) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t start = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i - start;
  };
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  std::size_t mantissa = digits();
  if (integer) return mantissa > 0 && i == t.size();
  if (i < t.size() && t[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == t.size();
}

[[noreturn]] void refuse(const NumberOption& o, const std::string& reason) {
  throw Error(ErrorKind::Input, reason, std::string(o.field));
}

void check_range(const NumberOption& o, double v, const std::string& shown) {
  if (o.min_exclusive ? !(v > o.min) : !(v >= o.min))
    refuse(o, fmt::format("must be {} {}, got {}", o.min_exclusive ? "above" : "at least", with_unit(o.min, o.unit),
                          shown));
  if (!(v <= o.max)) refuse(o, fmt::format("must be at most {}, got {}", with_unit(o.max, o.unit), shown));
}

std::string_view without_plus(std::string_view t) { return !t.empty() && t.front() == '+' ? t.substr(1) : t; }

}  // namespace

const std::vector<NumberOption>& number_options() { return kOptions; }

const NumberOption& number_option(std::string_view field) {
  for (const NumberOption& o : kOptions)
    if (o.field == field) return o;
  throw std::logic_error(fmt::format("no numeric option {}", field));
}

double parse_number(std::string_view field, std::string_view text) { return parse_scaled_number(field, text, 1.0); }

double parse_scaled_number(std::string_view field, std::string_view text, double scale) {
  const NumberOption& o = number_option(field);
  const std::string shown = quoted_for_error(std::string(text));
  const std::string plain = text.size() <= kQuotedForErrorMax ? std::string(text) : shown;  // a number, unquoted
  if (!decimal_syntax(text, o.integer))
    refuse(o, fmt::format("expected {}, got {}", o.integer ? "a whole number" : "a decimal number", shown));
  const std::string_view digits = without_plus(text);
  double v = 0;
  if (o.integer) {
    std::int64_t i = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), i);
    if (ec == std::errc::result_out_of_range)
      refuse(o, fmt::format("must be {} {}, got {}", digits.front() == '-' ? "at least" : "at most",
                            with_unit(digits.front() == '-' ? o.min : o.max, o.unit), plain));
    if (ec != std::errc() || end != digits.data() + digits.size())
      refuse(o, fmt::format("expected a whole number, got {}", shown));
    v = static_cast<double>(i);
  } else {
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    // Out of range: past the largest double (1e400), or below the least (1e-400).
    if (ec == std::errc::result_out_of_range || !std::isfinite(v))
      refuse(o, fmt::format("{} is not a number a double holds", shown));
    if (ec != std::errc() || end != digits.data() + digits.size())
      refuse(o, fmt::format("expected a decimal number, got {}", shown));
  }
  v *= scale;
  check_range(o, v, scale == 1.0 ? plain : fmt::format("{} ({})", shown, number_text(v)));
  return v;
}

std::int64_t parse_integer(std::string_view field, std::string_view text) {
  if (!number_option(field).integer) throw std::logic_error(fmt::format("{} is not a whole-number option", field));
  return static_cast<std::int64_t>(parse_number(field, text));
}

void check_number(std::string_view field, double value) { check_number(field, value, number_text(value)); }

void check_number(std::string_view field, double value, const std::string& shown) {
  const NumberOption& o = number_option(field);
  if (!std::isfinite(value)) refuse(o, fmt::format("must be a finite number, got {}", shown));
  if (o.integer && value != std::floor(value)) refuse(o, fmt::format("expected a whole number, got {}", shown));
  check_range(o, value, shown);
}

std::string range_text(const NumberOption& o) {
  const std::string low = o.min_exclusive ? fmt::format("above {}", number_text(o.min)) : number_text(o.min);
  return fmt::format("{}{}{}", low, o.min_exclusive ? ", at most " : " to ", with_unit(o.max, o.unit));
}

std::string number_options_markdown(std::string (*flag)(std::string_view field)) {
  std::string out = "| option | values | whole numbers | why the bound |\n| --- | --- | --- | --- |\n";
  for (const NumberOption& o : kOptions)
    out += fmt::format("| `{}` | {} | {} | {} |\n", flag(o.field), range_text(o), o.integer ? "yes" : "no", o.why);
  return out;
}

}  // namespace moeplan::io
