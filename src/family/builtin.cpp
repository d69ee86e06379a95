#include <moeplan/family/builtin.hpp>
#include <moeplan/family/flowmoe/family.hpp>
#include <moeplan/family/folding/family.hpp>
#include <moeplan/family/foldmoe/family.hpp>
#include <moeplan/family/fsmoe/family.hpp>
#include <moeplan/plan/family_registry.hpp>

namespace moeplan::family {

void register_builtin_families() {
  plan::register_family(foldmoe::family());
  plan::register_family(fsmoe::family());
  plan::register_family(flowmoe::family());
  plan::register_family(folding::family());
}

}  // namespace moeplan::family
