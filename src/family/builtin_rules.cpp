#include <moeplan/family/builtin.hpp>
#include <moeplan/family/flowmoe/rules.hpp>
#include <moeplan/family/folding/rules.hpp>
#include <moeplan/family/foldmoe/rules.hpp>
#include <moeplan/family/fsmoe/rules.hpp>

namespace moeplan::family {

void register_builtin_family_rules() {
  model::register_family_rules(foldmoe::rules());
  model::register_family_rules(fsmoe::rules());
  model::register_family_rules(flowmoe::rules());
  model::register_family_rules(folding::rules());
}

}  // namespace moeplan::family
