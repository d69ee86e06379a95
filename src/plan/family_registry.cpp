#include <moeplan/plan/family_registry.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::plan {
namespace {

// Filled at start-up, before any thread reads it (family/builtin.hpp).
std::vector<const Family*>& table() {
  static std::vector<const Family*> t;
  return t;
}

}  // namespace

void register_family(const Family& family) {
  for (const Family* f : table()) {
    if (f == &family) return;
    if (f->name() == family.name())
      throw Error(ErrorKind::Runtime,
                  fmt::format("a family named {} is already registered", quoted_for_error(family.name())));
  }
  model::register_family_rules(family.rules());
  table().push_back(&family);
}

const std::vector<const Family*>& registered_families() { return table(); }

const Family& family_named(std::string_view name) {
  for (const Family* f : table())
    if (f->name() == name) return *f;
  std::vector<std::string> names;
  for (const Family* f : table()) names.push_back(f->name());
  throw Error(ErrorKind::Input, fmt::format("unknown family {} ({})", quoted_for_error(name), model::join_names(names)),
              "schedule.family");
}

const Family& family_of(const model::ScenarioSpec& scenario) { return family_named(scenario.schedule.family); }

std::vector<const Family*> overlap_families() {
  std::vector<const Family*> out;
  for (const Family* f : table())
    if (f->overlap() != nullptr) out.push_back(f);
  return out;
}

const Family& mapping_family() {
  for (const Family* f : table())
    if (f->searches_mappings()) return *f;
  throw Error(ErrorKind::Runtime, "no registered family searches mappings (family/builtin.hpp registers one)");
}

std::vector<std::string> families_emitting(std::string_view format) {
  std::vector<std::string> out;
  for (const Family* f : table())
    if (f->emit_format() == format) out.push_back(f->name());
  return out;
}

}  // namespace moeplan::plan
