#include <moeplan/model/families.hpp>

#include <algorithm>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::model {
namespace {

struct Family {
  std::string name;
  std::vector<std::string> schedules;
};

const std::vector<Family>& table() {
  static const std::vector<Family> t{
      {"foldmoe", {"none", "tutel", "aaam", "1a1m", "1a1m-uniform"}},
      {"fsmoe", {"none", "tutel", "tutel-improved", "pipemoe-lina", "fsmoe-no-iio", "fsmoe"}},
      {"flowmoe", {"none", "tutel", "flowmoe-at", "flowmoe-ar", "flowmoe"}},
      {"folding", {"folded", "coupled"}},
  };
  return t;
}

}  // namespace

const std::vector<std::string>& families() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Family& f : table()) out.push_back(f.name);
    return out;
  }();
  return names;
}

bool is_family(const std::string& name) {
  return std::find(families().begin(), families().end(), name) != families().end();
}

const std::vector<std::string>& family_schedules(const std::string& family) {
  for (const Family& f : table())
    if (f.name == family) return f.schedules;
  throw Error(ErrorKind::Input, fmt::format("unknown family {} ({})", quoted_for_error(family), join_names(families())),
              "schedule.family");
}

std::vector<std::string> families_with_schedule(const std::string& schedule) {
  std::vector<std::string> out;
  for (const Family& f : table())
    if (std::find(f.schedules.begin(), f.schedules.end(), schedule) != f.schedules.end()) out.push_back(f.name);
  return out;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace moeplan::model
