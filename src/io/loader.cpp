#include <moeplan/io/loader.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/validate.hpp>

#include "io/proto/moeplan.pb.h"
#include "proto_convert.hpp"
#include "proto_text.hpp"
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

// Where --set overrides come from, for error messages.
const SourceLocation kCommandLine{"--set", 0, 0};

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
std::optional<FileKind> header_kind(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return header_kind_of_text(line);
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
    throw Error(ErrorKind::Input, fmt::format("--set expects field.path=value, got {}", quoted_for_error(text)));
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
                             kind == FileKind::Plan ? " (written by `moeplan plan`; give the scenario it was planned "
                                                      "for, with the plan's knobs as --set)"
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
        override_scalar_field(scenario, o.field, o.value);
        sources.overridden.push_back({o.field, sources.scenario.find(at), ""});
      } catch (const Error& e) {
        throw Error(ErrorKind::Input, e.reason(), at, sources.scenario.find(at));
      }
    }
    for (const Override& o : overrides)
      if (!is_reference_override(o)) {
        sources.add_override(o);
        override_scalar_field(scenario, o.field, o.value);
      }
  } catch (const Error& e) {
    throw sources.locate(e);
  }
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
  if (name_or_path.find('/') == std::string::npos && !name_or_path.empty())
    for (const KindInfo& k : kKinds) {
      const fs::path bundled = fs::path(data_root()) / k.folder / (name_or_path + ".textproto");
      if (fs::is_regular_file(bundled, ec)) return bundled.string();
    }
  throw Error(ErrorKind::Input, fmt::format("no such file, and no bundled file named '{}'", name_or_path));
}

namespace {

// The grid is expanded in memory, and every point is a simulation: a few axes
// of many values must be refused rather than expanded. The largest bundled
// sweep (scenarios/sweeps/fsmoe-table4.textproto) has 2 x 1458 = 2916 points
// of 7 axes, 4.1 MiB by the estimate below; the limits are 5.6x (points) and
// 62x (bytes) that. Points: in the long run, fuzz_text_format timed out (10 s)
// on a 1.2 kB sweep of 21870 + 7290 points, which took 5 s under ASan when
// rerun (docs/reliability.md). Bytes matter on their own: in a 21 kB sweep of
// 14 two-valued axes, one with 10 kB values, each of the 16384 points copies a
// 10 kB value twice (label and override), 330 MB.
constexpr std::size_t kMaxSweepPoints = 16384;
constexpr std::size_t kMaxSweepBytes = std::size_t{256} << 20;
// What one axis value costs at each point besides its text: a label pair and
// an override (two std::string each, 32 bytes on libstdc++) and the vectors' share.
constexpr std::size_t kBytesPerCell = 160;

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

}  // namespace

LoadedSweep load_sweep(const std::string& name_or_path) {
  const std::string path = resolve_path(FileKind::Sweep, name_or_path);
  return load_sweep_text(path, read_text_file(path));
}

LoadedSweep load_sweep_text(const std::string& path, const std::string& text) {
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
    const std::string column = axis.has_field() ? axis.field() : fmt::format("axis{}", a);
    if (std::find(out.columns.begin(), out.columns.end(), column) == out.columns.end()) out.columns.push_back(column);
    for (int v = 0; v < axis.values_size(); ++v)
      if (!axis.has_field() && axis.values(v).find('=') == std::string::npos) {
        const std::string vat = fmt::format("{}.values[{}]", at, v);
        throw Error(ErrorKind::Input, "an axis without a field needs field.path=value values", vat, index.find(vat));
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
  }
  std::size_t expanded_bytes = 0;  // of the points so far, estimated (kBytesPerCell)
  for (int b = 0; b < sweep.scenarios_size(); ++b) {
    const std::string& base = sweep.scenarios(b);
    // A scenario beside the sweep is loaded by its path; otherwise the entry
    // stays as written (the CSV's scenario column), which names the same file.
    std::string scenario_path = base;
    try {
      const FoundReference found = find_reference(FileKind::Scenario, base, path);
      if (found.beside) scenario_path = found.path;
    } catch (const Error& e) {
      const std::string at = fmt::format("scenarios[{}]", b);
      throw Error(ErrorKind::Input, e.reason(), at, index.find(at));
    }
    std::vector<const pb::SweepAxis*> axes;
    std::vector<int> axis_index;
    for (int a = 0; a < sweep.axes_size(); ++a) {
      const pb::SweepAxis& axis = sweep.axes(a);
      bool applies = axis.scenarios_size() == 0;
      for (const std::string& s : axis.scenarios()) applies = applies || s == base;
      if (applies) {
        axes.push_back(&axis);
        axis_index.push_back(a);
      }
    }
    std::size_t points = 1;
    for (const pb::SweepAxis* axis : axes) {
      points *= static_cast<std::size_t>(axis->values_size());
      if (out.points.size() + points > kMaxSweepPoints)
        throw Error(ErrorKind::Input, fmt::format("the grid has more than {} points", kMaxSweepPoints), "axes",
                    index.find("axes"));
    }
    // Every point copies one value of each axis (twice: label and override);
    // long values make a small file expand to gigabytes.
    for (const pb::SweepAxis* axis : axes) {
      std::size_t value_bytes = 0;
      for (const std::string& value : axis->values()) value_bytes += 2 * value.size();
      expanded_bytes += points / static_cast<std::size_t>(axis->values_size()) * value_bytes +
                        points * (2 * axis->field().size() + kBytesPerCell);
      if (expanded_bytes > kMaxSweepBytes)
        throw Error(ErrorKind::Input,
                    fmt::format("the grid's values would take more than {} MiB in memory", kMaxSweepBytes >> 20),
                    "axes", index.find("axes"));
    }
    // Odometer over the applicable axes, last axis fastest.
    std::vector<int> digit(axes.size(), 0);
    while (true) {
      SweepPoint point;
      point.scenario = scenario_path;
      for (std::size_t a = 0; a < axes.size(); ++a) {
        const std::string& value = axes[a]->values(digit[a]);
        const std::string column = axes[a]->has_field() ? axes[a]->field() : fmt::format("axis{}", axis_index[a]);
        point.labels.emplace_back(column, value);
        const std::string vat = fmt::format("axes[{}].values[{}]", axis_index[a], digit[a]);
        for (Override& o : axis_value_overrides(axes[a]->field(), value)) {
          o.origin = index.find(vat);
          o.origin_field = vat;
          point.overrides.push_back(std::move(o));
        }
      }
      out.points.push_back(std::move(point));
      std::size_t a = axes.size();
      while (a > 0 && ++digit[a - 1] == axes[a - 1]->values_size()) digit[--a] = 0;
      if (a == 0) break;
    }
  }
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
    throw Error(ErrorKind::Input, "--set applies to scenarios only", "", SourceLocation{path, 0, 0});
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
      for (const SweepPoint& point : sweep.points) {
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
