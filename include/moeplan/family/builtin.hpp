#pragma once
// The bundled families, registered in the order errors and docs list them:
// FoldMoE, FSMoE, FlowMoE (overlap schedules on a fixed mapping), then MoE
// Parallel Folding (the mapping search). A program registers them once at
// start-up, before any thread reads the registries; adding a family is a
// folder under src/family/ and a line in each function below.

namespace moeplan::family {

/// The families' rules only (model/family_rules.hpp): what loading and
/// validating scenarios needs, without the planners (the fuzz targets of the
/// readers link no more than this).
void register_builtin_family_rules();

/// The families (plan/family_registry.hpp), their rules with them.
void register_builtin_families();

}  // namespace moeplan::family
