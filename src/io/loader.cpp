#include <moeplan/io/loader.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/family_rules.hpp>
#include <moeplan/model/validate.hpp>

#include "io/proto/moeplan.pb.h"
#include "proto_convert.hpp"
#include "proto_text.hpp"
#include "routing_histogram.hpp"
#include "scalar_fields.hpp"
#include "scenario_resolution.hpp"

#ifndef MOEPLAN_SOURCE_DATA_DIR
#define MOEPLAN_SOURCE_DATA_DIR "."
#endif

namespace moeplan::io {
namespace fs = std::filesystem;
namespace gpb = google::protobuf;

namespace {

struct KindInfo {
  FileKind kind;
  const char* name;        // as in "# proto-message:" and JSON output
  const char* message;     // Protobuf message name
  const char* folder;      // bundled folder under the data root
  const char* folder_tag;  // a parent folder with this name implies the kind
};

constexpr KindInfo kKinds[] = {
    {FileKind::Model, "model", "Model", "models", "models"},
    {FileKind::Cluster, "cluster", "Cluster", "scenarios/clusters", "clusters"},
    {FileKind::Profile, "profile", "CostProfile", "calibration/profiles", "profiles"},
    {FileKind::Sweep, "sweep", "Sweep", "scenarios/sweeps", "sweeps"},
    {FileKind::Plan, "plan", "Plan", "plans", "plans"},
    {FileKind::Scenario, "scenario", "Scenario", "scenarios", "scenarios"},
};

const KindInfo& info(FileKind kind) {
  for (const KindInfo& k : kKinds)
    if (k.kind == kind) return k;
  return kKinds[0];
}

// Where overrides typed by the user come from, for error messages: the
// request's set option (the CLI's --set, the Python module's set=).
const SourceLocation kCommandLine{option_ref("request.set"), 0, 0};

SourceLocation file_only(const std::string& path) { return SourceLocation{path, 0, 0}; }

// The kind named by a "# proto-message: X" first line, if the file has one.
// The kind named by a "# proto-message: X" first line of a text, if it has one.
std::optional<FileKind> header_kind_of_text(const std::string& text) {
  const std::string line = text.substr(0, text.find('\n'));
  const std::string marker = "# proto-message:";
  if (line.rfind(marker, 0) != 0) return std::nullopt;
  std::string name = line.substr(marker.size());
  name.erase(0, name.find_first_not_of(" \t"));
  name.erase(name.find_last_not_of(" \t\r") + 1);
  if (const std::size_t dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
  for (const KindInfo& k : kKinds)
    if (name == k.message) return k.kind;
  return std::nullopt;
}

// The kind named by a "# proto-message: X" first line of a file, if it has one.
// Reads at most the first 256 bytes: the header is one short line, and a
// regular file of gigabytes without a newline must not be read whole here.
std::optional<FileKind> header_kind(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string head(256, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return header_kind_of_text(head);
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A reference found: its path, and whether it lies beside the referencing file.
struct FoundReference {
  std::string path;
  bool beside = false;
};

// The places a reference may name, in the order they are tried (see
// resolve_reference_path): beside the referencing file, as given, bundled.
std::vector<std::pair<std::string, bool>> reference_candidates(FileKind kind, const std::string& ref,
                                                               const std::string& referencing_file) {
  std::vector<std::pair<std::string, bool>> out;
  auto add = [&](const fs::path& path, bool beside) {
    for (const auto& [seen, unused] : out)
      if (seen == path.string()) return;
    out.emplace_back(path.string(), beside);
  };
  const bool bare = ref.find('/') == std::string::npos;
  const std::string with_extension = ends_with(ref, ".textproto") ? ref : ref + ".textproto";
  if (fs::path(ref).is_absolute()) {
    add(ref, false);
    return out;
  }
  if (!referencing_file.empty()) {
    const fs::path folder = fs::path(referencing_file).parent_path();
    add(folder / ref, true);
    if (bare) add(folder / with_extension, true);
  }
  add(ref, false);
  if (bare) add(fs::path(data_root()) / info(kind).folder / with_extension, false);
  return out;
}

FoundReference find_reference(FileKind kind, const std::string& ref, const std::string& referencing_file) {
  if (ref.empty()) throw Error(ErrorKind::Input, fmt::format("an empty {} reference", info(kind).name));
  std::string tried;
  for (const auto& [candidate, beside] : reference_candidates(kind, ref, referencing_file)) {
    tried += (tried.empty() ? "" : ", ") + candidate;
    std::error_code ec;
    if (!fs::is_regular_file(candidate, ec)) continue;
    // A file of another kind with the same name (a scenario "mixtral-8x7b"
    // beside which model_ref "mixtral-8x7b" means the bundled model) is passed over.
    const std::optional<FileKind> declared = header_kind(candidate);
    if (declared && *declared != kind) {
      tried += fmt::format(" (a {} file)", info(*declared).name);
      continue;
    }
    return FoundReference{candidate, beside};
  }
  // The places tried spell the reference out again: a long one is not repeated.
  throw Error(ErrorKind::Input,
              fmt::format("no {} named {}: tried {}", info(kind).name, quoted_for_error(ref),
                          ref.size() > kQuotedForErrorMax ? "beside the file, as given and bundled" : tried));
}

// Parses a file's text, converts and validates; errors are located in that file.
template <typename Message, typename Spec>
Spec load_checked(const std::string& path, const std::string& text, Message& message, LocationIndex& index,
                  const std::function<Spec(const Message&)>& convert) {
  index = parse_text_proto(path, text, message);
  try {
    return convert(message);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Input || !e.location().file.empty()) throw;
    throw e.located(index.find(e.field()));
  }
}

template <typename Spec, typename Message>
Spec convert_and_validate(const Message& message) {
  Spec spec = to_spec(message);
  model::validate(spec);
  return spec;
}

// Where each part of a resolved scenario was written: the scenario file, or a
// referenced file for the "model", "cluster" and "profile" parts.
struct ScenarioSources {
  LocationIndex scenario;
  std::vector<std::pair<std::string, LocationIndex>> referenced;   // prefix -> file
  struct Overridden {
    std::string path;       // the field set
    SourceLocation where;   // the scenario's set: line, the command line or a sweep file
    std::string by;         // the field that set it in a sweep file ("axes[1].values[2]"), else ""
  };
  std::vector<Overridden> overridden;

  void add_override(const Override& o) {
    overridden.push_back({o.field, o.origin.file.empty() ? kCommandLine : o.origin, o.origin_field});
  }

  Error locate(const Error& e) const {
    if (e.kind() != ErrorKind::Input || !e.location().file.empty()) return e;
    for (const auto& [path, where, by] : overridden)
      if (e.field() == path || e.field().rfind(path + ".", 0) == 0 || path.rfind(e.field() + ".", 0) == 0) {
        // A sweep's axis value: blame the value's line, and name the field it sets.
        if (!by.empty()) return Error(e.kind(), fmt::format("{}: {}", e.field(), e.reason()), by, where);
        return e.located(where);
      }
    for (const auto& [prefix, index] : referenced) {
      // About the part as a whole (e.g. a profile for another cluster): the reference line.
      if (e.field() == prefix) return Error(e.kind(), e.reason(), prefix + "_ref", scenario.find(prefix + "_ref"));
      if (e.field().rfind(prefix + ".", 0) == 0) {
        const std::string inner = e.field() == prefix ? "" : e.field().substr(prefix.size() + 1);
        return Error(e.kind(), e.reason(), inner, index.find(inner));
      }
    }
    return e.located(scenario.find(e.field()));
  }
};

// Replaces "<part>_ref" by the referenced file's message, checked on its own.
// A reference written in the scenario resolves beside it; one given with --set
// was typed on the command line, so it resolves as given (CWD), then bundled.
template <typename Message>
void resolve_reference(FileKind kind, const std::string& part, const std::string& ref, bool from_command_line,
                       const std::function<void(const Message&)>& check, Message* target, ScenarioSources& sources) {
  const std::string ref_field = part + "_ref";
  std::string path;
  try {
    path = resolve_reference_path(kind, ref, from_command_line ? "" : sources.scenario.file());
  } catch (const Error& e) {
    throw Error(ErrorKind::Input, e.reason(), ref_field,
                from_command_line ? kCommandLine : sources.scenario.find(ref_field));
  }
  Message message;
  LocationIndex index;
  load_checked<Message, int>(path, read_text_file(path), message, index, [&](const Message& m) {
    check(m);
    return 0;
  });
  target->CopyFrom(message);
  sources.referenced.emplace_back(part, std::move(index));
}

template <typename Spec>
void validate_part(const char* part, const Spec& spec) {
  try {
    model::validate(spec);
  } catch (const Error& e) {
    throw e.prefixed(part);
  }
}

// The options a scenario writes itself: every present field of its
// parallelism, workload and schedule messages (model, cluster and profile
// fields describe hardware and models, not choices; setting one with --set or
// `set:` makes it an option).
std::vector<std::string> written_options(const pb::Scenario& scenario) {
  std::vector<std::string> out;
  const gpb::Message* parts[] = {&scenario.parallelism(), &scenario.workload(), &scenario.schedule()};
  const char* names[] = {"parallelism", "workload", "schedule"};
  for (int i = 0; i < 3; ++i) {
    std::vector<const gpb::FieldDescriptor*> fields;
    parts[i]->GetReflection()->ListFields(*parts[i], &fields);
    for (const gpb::FieldDescriptor* f : fields) out.push_back(std::string(names[i]) + "." + f->name());
  }
  return out;
}

bool is_reference_override(const Override& o) {
  return o.field == "model_ref" || o.field == "cluster_ref" || o.field == "profile_ref";
}

bool set_on_command_line(const std::vector<Override>& overrides, const std::string& field) {
  return std::any_of(overrides.begin(), overrides.end(), [&](const Override& o) { return o.field == field; });
}

}  // namespace

const char* to_string(FileKind kind) { return info(kind).name; }

std::string data_root() {
  if (const char* env = std::getenv("MOEPLAN_DATA_DIR"); env != nullptr && *env != '\0') return env;
  return MOEPLAN_SOURCE_DATA_DIR;
}

std::string resolve_path(FileKind kind, const std::string& name_or_path) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  if (fs::is_directory(name_or_path, ec))
    throw Error(ErrorKind::Input, fmt::format("{}: is a directory, not a {} file", name_or_path, info(kind).name));
  // A FIFO, device or socket: read_text_file says what it is and refuses it.
  if (fs::exists(name_or_path, ec)) return name_or_path;
  const bool bare = name_or_path.find('/') == std::string::npos && !name_or_path.empty();
  if (bare) {
    const fs::path bundled = fs::path(data_root()) / info(kind).folder / (name_or_path + ".textproto");
    if (fs::is_regular_file(bundled, ec)) return bundled.string();
    throw Error(ErrorKind::Input,
                fmt::format("no such file, and no bundled {} named {} in {}", info(kind).name,
                            quoted_for_error(name_or_path), (fs::path(data_root()) / info(kind).folder).string()));
  }
  throw Error(ErrorKind::Input, fmt::format("no such file: {}", name_or_path));
}

std::string resolve_reference_path(FileKind kind, const std::string& ref, const std::string& referencing_file) {
  return find_reference(kind, ref, referencing_file).path;
}

FileKind detect_kind(const std::string& path) {
  std::string text = read_text_file(path);
  const std::string marker = "# proto-message:";
  if (text.rfind(marker, 0) == 0) {
    std::string name = text.substr(marker.size(), text.find('\n') - marker.size());
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t\r") + 1);
    const std::size_t dot = name.rfind('.');
    if (dot != std::string::npos) name = name.substr(dot + 1);
    for (const KindInfo& k : kKinds)
      if (name == k.message) return k.kind;
    throw Error(ErrorKind::Input, fmt::format("unknown message {} in the proto-message header", quoted_for_error(name)),
                "proto-message", SourceLocation{path, 1, 1});
  }
  for (fs::path dir = fs::absolute(path).parent_path(); !dir.empty() && dir != dir.root_path();
       dir = dir.parent_path()) {
    for (const KindInfo& k : kKinds)
      if (dir.filename() == k.folder_tag) return k.kind;
  }
  throw Error(ErrorKind::Input,
              "cannot tell what kind of file this is: start it with a '# proto-message: Model' "
              "(or Cluster, CostProfile, Scenario, Plan, Sweep) line",
              "", SourceLocation{path, 1, 1});
}

Override parse_override(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(ErrorKind::Input, fmt::format("expects field.path=value, got {}", quoted_for_error(text)), "request.set");
  return Override{text.substr(0, eq), text.substr(eq + 1)};
}

model::ModelSpec load_model(const std::string& name_or_path) {
  const std::string path = resolve_path(FileKind::Model, name_or_path);
  return load_model_text(path, read_text_file(path));
}

model::ClusterSpec load_cluster(const std::string& name_or_path) {
  const std::string path = resolve_path(FileKind::Cluster, name_or_path);
  return load_cluster_text(path, read_text_file(path));
}

model::CostProfileSpec load_profile(const std::string& name_or_path) {
  const std::string path = resolve_path(FileKind::Profile, name_or_path);
  return load_profile_text(path, read_text_file(path));
}

model::ModelSpec load_model_text(const std::string& path, const std::string& text) {
  pb::Model message;
  LocationIndex index;
  return load_checked<pb::Model, model::ModelSpec>(path, text, message, index,
                                                   convert_and_validate<model::ModelSpec, pb::Model>);
}

model::ClusterSpec load_cluster_text(const std::string& path, const std::string& text) {
  pb::Cluster message;
  LocationIndex index;
  return load_checked<pb::Cluster, model::ClusterSpec>(path, text, message, index,
                                                       convert_and_validate<model::ClusterSpec, pb::Cluster>);
}

model::CostProfileSpec load_profile_text(const std::string& path, const std::string& text) {
  pb::CostProfile message;
  LocationIndex index;
  return load_checked<pb::CostProfile, model::CostProfileSpec>(
      path, text, message, index, convert_and_validate<model::CostProfileSpec, pb::CostProfile>);
}

namespace {

// A dense model (no moe) has no experts for a model.moe.* override to act on;
// setting one would start an MoE section of that one field.
void refuse_moe_field_on_dense(const pb::Scenario& scenario, const std::string& field) {
  if (field.rfind("model.moe.", 0) == 0 && scenario.has_model() && !scenario.model().has_moe())
    throw Error(ErrorKind::Input,
                fmt::format("cannot act on this dense model (no moe): {} has no experts; an MoE model writes its "
                            "whole moe section in its model file",
                            scenario.model().name()),
                field);
}

// Parses a scenario, puts each referenced file in place of its reference and
// applies the scenario's `set:` lines, then the overrides: the message every
// field of which the scenario's result may read.
void resolve_scenario(const std::string& path, const std::string& text, const std::vector<Override>& overrides,
                      pb::Scenario& scenario, ScenarioSources& sources) {
  // Another kind of file given where a scenario belongs (a plan written by
  // `moeplan plan`, a model, ...): say so rather than report its first field.
  const auto not_a_scenario = [&](FileKind kind) {
    return Error(ErrorKind::Input,
                 fmt::format("this is a {} file, not a scenario{}", info(kind).name,
                             kind == FileKind::Plan ? " (`simulate` and `execute` take a plan written by `moeplan "
                                                      "plan -o`, with its '# proto-message: Plan' first line; other "
                                                      "commands take the scenario it was planned for)"
                                                    : ""),
                 "", file_only(path));
  };
  if (const std::optional<FileKind> declared = header_kind_of_text(text); declared && *declared != FileKind::Scenario)
    throw not_a_scenario(*declared);
  try {
    sources.scenario = parse_text_proto(path, text, scenario);
  } catch (const Error&) {
    pb::Plan plan;  // a plan without its header line?
    bool is_plan = false;
    try {
      parse_text_proto(path, text, plan);
      is_plan = true;
    } catch (const Error&) {
    }
    if (is_plan) throw not_a_scenario(FileKind::Plan);
    throw;  // the scenario's own error
  }
  for (const Override& o : overrides)
    if (is_reference_override(o)) {
      set_scalar_field(scenario, o.field, o.value);
      sources.add_override(o);
    }
  try {
    if (scenario.has_model_ref()) {
      const std::string ref = scenario.model_ref();  // read before mutable_model() clears the oneof
      resolve_reference<pb::Model>(
          FileKind::Model, "model", ref, set_on_command_line(overrides, "model_ref"),
          [](const pb::Model& m) { convert_and_validate<model::ModelSpec>(m); }, scenario.mutable_model(), sources);
    }
    if (scenario.has_cluster_ref()) {
      const std::string ref = scenario.cluster_ref();  // read before mutable_cluster() clears the oneof
      resolve_reference<pb::Cluster>(
          FileKind::Cluster, "cluster", ref, set_on_command_line(overrides, "cluster_ref"),
          [](const pb::Cluster& c) { convert_and_validate<model::ClusterSpec>(c); }, scenario.mutable_cluster(),
          sources);
    }
    if (scenario.has_profile_ref()) {
      const std::string ref = scenario.profile_ref();  // read before mutable_profile() clears the oneof
      resolve_reference<pb::CostProfile>(
          FileKind::Profile, "profile", ref, set_on_command_line(overrides, "profile_ref"),
          [](const pb::CostProfile& p) { convert_and_validate<model::CostProfileSpec>(p); }, scenario.mutable_profile(),
          sources);
    }
    for (int i = 0; i < scenario.set_size(); ++i) {
      const std::string at = fmt::format("set[{}]", i);
      try {
        const Override o = parse_override(scenario.set(i));
        refuse_moe_field_on_dense(scenario, o.field);
        override_scalar_field(scenario, o.field, o.value);
        sources.overridden.push_back({o.field, sources.scenario.find(at), ""});
      } catch (const Error& e) {
        throw Error(ErrorKind::Input, e.reason(), at, sources.scenario.find(at));
      }
    }
    for (const Override& o : overrides)
      if (!is_reference_override(o)) {
        sources.add_override(o);
        refuse_moe_field_on_dense(scenario, o.field);
        override_scalar_field(scenario, o.field, o.value);
      }
  } catch (const Error& e) {
    throw sources.locate(e);
  }
}

// workload.routing_histogram_ref, when routing = histogram: resolved beside
// the file that wrote it (the scenario, its `set:` line, a sweep file), or as
// given then bundled when --set typed it, as model_ref is; then read.
void read_histogram(model::ScenarioSpec& spec, const ScenarioSources& sources) {
  model::WorkloadSpec& w = spec.workload;
  if (w.routing != model::Routing::Histogram || w.routing_histogram_ref.empty()) return;
  std::string referencing = sources.scenario.file();
  for (const auto& o : sources.overridden)
    if (o.path == "workload.routing_histogram_ref") referencing = o.where.file == kCommandLine.file ? "" : o.where.file;
  try {
    w.routing_histogram_file = resolve_routing_histogram(w.routing_histogram_ref, referencing);
  } catch (const Error& e) {
    throw Error(ErrorKind::Input, e.reason(), "workload.routing_histogram_ref");
  }
  w.routing_histogram = read_routing_histogram(w.routing_histogram_file);
}

}  // namespace

pb::Scenario resolved_scenario_message(const std::string& name_or_path, const std::vector<Override>& overrides) {
  pb::Scenario scenario;
  ScenarioSources sources;
  const std::string path = resolve_path(FileKind::Scenario, name_or_path);
  resolve_scenario(path, read_text_file(path), overrides, scenario, sources);
  return scenario;
}

model::ScenarioSpec load_scenario(const std::string& name_or_path, const std::vector<Override>& overrides) {
  const std::string path = resolve_path(FileKind::Scenario, name_or_path);
  return load_scenario_text(path, read_text_file(path), overrides);
}

model::ScenarioSpec load_scenario_text(const std::string& path, const std::string& text,
                                       const std::vector<Override>& overrides) {
  pb::Scenario scenario;
  ScenarioSources sources;
  resolve_scenario(path, text, overrides, scenario, sources);
  try {
    model::ScenarioSpec spec = to_spec(scenario);
    spec.options = written_options(scenario);
    for (const auto& o : sources.overridden)
      if (std::find(spec.options.begin(), spec.options.end(), o.path) == spec.options.end())
        spec.options.push_back(o.path);
    read_histogram(spec, sources);
    validate_part("model", spec.model);
    validate_part("cluster", spec.cluster);
    if (spec.profile) validate_part("profile", *spec.profile);
    model::validate(spec);
    return spec;
  } catch (const Error& e) {
    throw sources.locate(e);
  }
}

std::string resolve_any_path(const std::string& name_or_path) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  if (fs::is_directory(name_or_path, ec))
    throw Error(ErrorKind::Input, "is a directory, not a file");
  if (fs::exists(name_or_path, ec)) return name_or_path;  // refused by read_text_file, which says why
  if (name_or_path.find('/') == std::string::npos && !name_or_path.empty())
    for (const KindInfo& k : kKinds) {
      const fs::path bundled = fs::path(data_root()) / k.folder / (name_or_path + ".textproto");
      if (fs::is_regular_file(bundled, ec)) return bundled.string();
    }
  throw Error(ErrorKind::Input, fmt::format("no such file, and no bundled file named '{}'", name_or_path));
}

namespace {

std::vector<Override> axis_value_overrides(const std::string& field, const std::string& value) {
  if (value.find('=') == std::string::npos) return {Override{field, value}};
  std::vector<Override> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t end = std::min(value.find(';', start), value.size());
    const std::string part = value.substr(start, end - start);
    if (!part.empty()) out.push_back(parse_override(part));
    start = end + 1;
  }
  return out;
}

// Grid sizes saturate at kSaturated (SIZE_MAX) rather than wrap: 30 axes of
// 10 values are 10^30 points, which modulo 2^64 could look small.
constexpr std::size_t kSaturated = std::numeric_limits<std::size_t>::max();
std::size_t saturating_product(std::size_t a, std::size_t b) {
  return b != 0 && a > kSaturated / b ? kSaturated : a * b;
}
std::size_t saturating_sum(std::size_t a, std::size_t b) { return a > kSaturated - b ? kSaturated : a + b; }

}  // namespace

std::size_t LoadedSweep::size() const {
  std::size_t total = 0;
  for (const SweepBase& base : bases) total += base.points;
  return total;
}

SweepPoint LoadedSweep::point(std::size_t i) const {
  std::size_t b = 0;
  while (b < bases.size() && i >= bases[b].points) i -= bases[b++].points;
  MOEPLAN_CHECK(b < bases.size(), "a sweep point index within the grid");
  const SweepBase& base = bases[b];
  // Mixed-radix digits of i, the last axis fastest.
  std::vector<std::size_t> digit(base.axes.size());
  for (std::size_t a = base.axes.size(); a > 0; --a) {
    const std::size_t radix = axes[base.axes[a - 1]].values.size();
    digit[a - 1] = i % radix;
    i /= radix;
  }
  SweepPoint point;
  point.scenario = base.scenario;
  for (std::size_t a = 0; a < base.axes.size(); ++a) {
    const SweepAxis& axis = axes[base.axes[a]];
    const std::string& value = axis.values[digit[a]];
    point.labels.emplace_back(axis.column, value);
    const std::string vat = fmt::format("axes[{}].values[{}]", axis.index, digit[a]);
    for (Override& o : axis_value_overrides(axis.field, value)) {
      o.origin = axis.value_lines[digit[a]];
      o.origin_field = vat;
      point.overrides.push_back(std::move(o));
    }
  }
  return point;
}

LoadedSweep load_sweep(const std::string& name_or_path, std::size_t max_points) {
  const std::string path = resolve_path(FileKind::Sweep, name_or_path);
  return load_sweep_text(path, read_text_file(path), max_points);
}

LoadedSweep load_sweep_text(const std::string& path, const std::string& text, std::size_t max_points) {
  pb::Sweep sweep;
  const LocationIndex index = parse_text_proto(path, text, sweep);
  LoadedSweep out;
  out.name = sweep.name();
  out.path = path;
  if (sweep.scenarios_size() == 0)
    throw Error(ErrorKind::Input, "at least one base scenario is required", "scenarios", index.find("scenarios"));
  for (int i = 0; i < sweep.schedules_size(); ++i) {
    if (!model::is_known_schedule(sweep.schedules(i))) {
      const std::string at = fmt::format("schedules[{}]", i);
      throw Error(ErrorKind::Input, fmt::format("unknown schedule '{}'", sweep.schedules(i)), at, index.find(at));
    }
    out.schedules.push_back(sweep.schedules(i));
  }
  for (int a = 0; a < sweep.axes_size(); ++a) {
    const pb::SweepAxis& axis = sweep.axes(a);
    const std::string at = fmt::format("axes[{}]", a);
    if (axis.values_size() == 0) throw Error(ErrorKind::Input, "an axis needs values", at + ".values", index.find(at));
    SweepAxis loaded;
    loaded.field = axis.has_field() ? axis.field() : "";
    loaded.column = axis.has_field() ? axis.field() : fmt::format("axis{}", a);
    loaded.index = static_cast<std::size_t>(a);
    if (std::find(out.columns.begin(), out.columns.end(), loaded.column) == out.columns.end())
      out.columns.push_back(loaded.column);
    for (int v = 0; v < axis.values_size(); ++v) {
      const std::string vat = fmt::format("{}.values[{}]", at, v);
      if (!axis.has_field() && axis.values(v).find('=') == std::string::npos)
        throw Error(ErrorKind::Input, "an axis without a field needs field.path=value values", vat, index.find(vat));
      loaded.values.push_back(axis.values(v));
      loaded.value_lines.push_back(index.find(vat));
      // Checked here, made again by point(): a malformed value fails the load, not a point.
      try {
        axis_value_overrides(loaded.field, axis.values(v));
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Input) throw;
        throw Error(ErrorKind::Input, e.reason(), vat, index.find(vat));
      }
    }
    for (int s = 0; s < axis.scenarios_size(); ++s) {
      bool known = false;
      for (int b = 0; b < sweep.scenarios_size(); ++b) known = known || sweep.scenarios(b) == axis.scenarios(s);
      if (!known) {
        const std::string sat = fmt::format("{}.scenarios[{}]", at, s);
        throw Error(ErrorKind::Input, fmt::format("'{}' is not one of the sweep's scenarios", axis.scenarios(s)), sat,
                    index.find(sat));
      }
    }
    out.axes.push_back(std::move(loaded));
  }
  std::size_t total = 0;
  for (int b = 0; b < sweep.scenarios_size(); ++b) {
    const std::string& base = sweep.scenarios(b);
    // A scenario beside the sweep is loaded by its path; otherwise the entry
    // stays as written (the CSV's scenario column), which names the same file.
    SweepBase loaded;
    loaded.scenario = base;
    try {
      const FoundReference found = find_reference(FileKind::Scenario, base, path);
      if (found.beside) loaded.scenario = found.path;
    } catch (const Error& e) {
      const std::string at = fmt::format("scenarios[{}]", b);
      throw Error(ErrorKind::Input, e.reason(), at, index.find(at));
    }
    for (int a = 0; a < sweep.axes_size(); ++a) {
      const pb::SweepAxis& axis = sweep.axes(a);
      bool applies = axis.scenarios_size() == 0;
      for (const std::string& s : axis.scenarios()) applies = applies || s == base;
      if (!applies) continue;
      loaded.axes.push_back(static_cast<std::size_t>(a));
      loaded.points = saturating_product(loaded.points, static_cast<std::size_t>(axis.values_size()));
    }
    total = saturating_sum(total, loaded.points);
    out.bases.push_back(std::move(loaded));
  }
  // The work bound (issue 14 item 4): every point is a simulation per schedule.
  if (total == kSaturated || total > max_points)
    throw Error(ErrorKind::Input,
                fmt::format("the grid has {} points, more than the {} allowed ({} raises it)",
                            total == kSaturated ? std::string("more than 2^64") : fmt::format("{}", total), max_points,
                            option_ref("request.max_points")),
                "axes", index.find("axes"));
  return out;
}

model::ScenarioSpec load_sweep_point(const SweepPoint& point) {
  try {
    return load_scenario(point.scenario, point.overrides);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Input || point.overrides.empty() || e.location().file == point.overrides[0].origin.file)
      throw;
    // Shown elsewhere (a referenced model's head_dim when an axis sets d_model):
    // the axis value that alone makes the base scenario fail is to blame.
    try {
      load_scenario(point.scenario);
    } catch (const Error&) {
      throw e;  // the base scenario fails on its own
    }
    for (std::size_t i = 0; i < point.overrides.size();) {
      std::size_t end = i + 1;
      while (end < point.overrides.size() && point.overrides[end].origin_field == point.overrides[i].origin_field) ++end;
      const std::vector<Override> group(point.overrides.begin() + static_cast<std::ptrdiff_t>(i),
                                        point.overrides.begin() + static_cast<std::ptrdiff_t>(end));
      try {
        load_scenario(point.scenario, group);
      } catch (const Error& alone) {
        if (group[0].origin.file.empty() || alone.location().file == group[0].origin.file) throw alone;
        std::string set;
        for (const Override& o : group) set += fmt::format("{}{}={}", set.empty() ? "" : ";", o.field, o.value);
        // One line however long the axis value: a long one is cut, quoted, with its length.
        if (set.size() > 60) set = quoted_for_error(set);
        throw Error(ErrorKind::Input, fmt::format("{} makes the scenario invalid: {}", set, format_error(alone)),
                    group[0].origin_field, group[0].origin);
      }
      i = end;
    }
    throw;
  }
}

ValidatedFile validate_file(const std::string& name_or_path, const std::vector<Override>& overrides) {
  const std::string path = resolve_any_path(name_or_path);
  ValidatedFile result;
  result.kind = detect_kind(path);
  if (!overrides.empty() && result.kind != FileKind::Scenario)
    throw Error(ErrorKind::Input, fmt::format("{} applies to scenarios only", option_ref("request.set")), "",
                SourceLocation{path, 0, 0});
  switch (result.kind) {
    case FileKind::Model:
      result.model = load_model(path);
      break;
    case FileKind::Cluster:
      load_cluster(path);
      break;
    case FileKind::Profile:
      load_profile(path);
      break;
    case FileKind::Scenario:
      result.scenario = load_scenario(path, overrides);
      break;
    case FileKind::Plan: {
      pb::Plan plan;
      parse_text_proto(path, read_text_file(path), plan);
      break;
    }
    case FileKind::Sweep: {
      // Every grid point must make a valid scenario.
      const LoadedSweep sweep = load_sweep(path);
      for (std::size_t i = 0; i < sweep.size(); ++i) {
        const SweepPoint point = sweep.point(i);
        try {
          load_sweep_point(point);
        } catch (const Error& e) {
          if (e.location().file == path) throw;  // blamed on an axis value already
          std::string where;
          for (const auto& [column, value] : point.labels)
            where += fmt::format("{}{}={}", where.empty() ? "" : ", ", column, value);
          throw Error(ErrorKind::Input,
                      fmt::format("grid point ({}) of {}: {}", where, point.scenario, format_error(e)), "axes",
                      file_only(path));
        }
      }
      break;
    }
  }
  return result;
}

}  // namespace moeplan::io
