#include <moeplan/model/family_rules.hpp>

#include <algorithm>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::model {
namespace {

// Filled at start-up, before any thread reads it (family/builtin.hpp).
std::vector<const FamilyRules*>& table() {
  static std::vector<const FamilyRules*> t;
  return t;
}

}  // namespace

void register_family_rules(const FamilyRules& rules) {
  const FamilyRules* known = find_family_rules(rules.name());
  if (known == &rules) return;  // registering the same family twice is harmless
  if (known != nullptr)
    throw Error(ErrorKind::Runtime, fmt::format("a family named {} is already registered", quoted_for_error(rules.name())));
  table().push_back(&rules);
}

const std::vector<const FamilyRules*>& registered_family_rules() { return table(); }

const FamilyRules* find_family_rules(std::string_view name) {
  for (const FamilyRules* f : table())
    if (f->name() == name) return f;
  return nullptr;
}

const FamilyRules& family_rules(std::string_view name) {
  if (const FamilyRules* f = find_family_rules(name)) return *f;
  throw Error(ErrorKind::Input,
              fmt::format("unknown family {} ({})", quoted_for_error(name), join_names(family_names())),
              "schedule.family");
}

std::vector<std::string> families_with_schedule(std::string_view schedule) {
  std::vector<std::string> out;
  for (const FamilyRules* f : table())
    if (std::find(f->schedules().begin(), f->schedules().end(), schedule) != f->schedules().end())
      out.push_back(f->name());
  return out;
}

bool is_known_schedule(std::string_view schedule) {
  for (const FamilyRules* f : table())
    if (f->names_schedules() && std::find(f->schedules().begin(), f->schedules().end(), schedule) != f->schedules().end())
      return true;
  return false;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string join_names_and(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

std::vector<std::string> families_naming_schedules() {
  std::vector<std::string> out;
  for (const FamilyRules* f : table())
    if (f->names_schedules()) out.push_back(f->name());
  return out;
}

std::vector<std::string> family_names() {
  std::vector<std::string> out;
  for (const FamilyRules* f : table()) out.push_back(f->name());
  return out;
}

}  // namespace moeplan::model
