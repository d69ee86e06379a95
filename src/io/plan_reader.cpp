#include <moeplan/io/plan_reader.hpp>

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/family_rules.hpp>
#include <moeplan/model/pipeline_layout.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/model/size_bounds.hpp>

#include "io/proto/moeplan.pb.h"
#include "proto_text.hpp"

namespace moeplan::io {
namespace {

model::PlanSpec plan_to_spec(const pb::Plan& p, const std::string& path) {
  const auto missing = [&](const char* field) {
    return Error(ErrorKind::Input,
                 fmt::format("missing: a plan names {} so that simulate and execute can rebuild the run (a plan "
                             "written before plans carried it does not: plan again)",
                             field),
                 field, SourceLocation{path});
  };
  if (!p.has_scenario_ref()) throw missing("scenario_ref");
  if (!p.has_family()) throw missing("family");
  if (!p.has_schedule()) throw missing("schedule");
  // A plan file is input like any other, possibly edited by hand: its
  // numbers are checked here, located at their field, before report or
  // execute trusts them (issue 28): finite, positive, within the scenario
  // format's bounds, and the speed-up the ratio of the two times it is.
  const auto refuse = [&](const std::string& field, const std::string& reason) {
    return Error(ErrorKind::Input, reason, field, SourceLocation{path});
  };
  const auto check_ms = [&](const char* field, bool has, double ms) {
    if (!has) throw missing(field);
    // 1e12 ms is 31 years: no iteration takes longer.
    if (!std::isfinite(ms) || !(ms > 0) || ms > 1e12)
      throw refuse(field, fmt::format("must be a finite time above 0 and at most 1e12 ms, got {}", ms));
  };
  check_ms("iteration_ms", p.has_iteration_ms(), p.iteration_ms());
  check_ms("baseline_ms", p.has_baseline_ms(), p.baseline_ms());
  if (!p.has_speedup()) throw missing("speedup");
  const double ratio = p.baseline_ms() / p.iteration_ms();
  if (!std::isfinite(p.speedup()) || !(std::fabs(p.speedup() - ratio) <= 1e-6 * ratio))
    throw refuse("speedup", fmt::format("{} is not baseline_ms / iteration_ms = {}", p.speedup(), ratio));
  const auto check_count = [&](const std::string& field, std::int64_t value, std::int64_t max) {
    if (value < 1 || value > max)
      throw refuse(field, fmt::format("must be from 1 to {}, got {}", max, value));
  };
  const pb::Knobs& knobs = p.knobs();
  if (knobs.has_degree()) check_count("knobs.degree", knobs.degree(), model::kMaxDegree);
  if (knobs.has_degree_forward()) check_count("knobs.degree_forward", knobs.degree_forward(), model::kMaxDegree);
  if (knobs.has_degree_backward()) check_count("knobs.degree_backward", knobs.degree_backward(), model::kMaxDegree);
  for (int i = 0; i < knobs.slicing_size(); ++i)
    check_count(fmt::format("knobs.slicing[{}]", i), knobs.slicing(i), model::kMaxSeq * model::kMaxBatch);
  if (knobs.has_ar_chunk_bytes())
    check_count("knobs.ar_chunk_bytes", knobs.ar_chunk_bytes(), std::numeric_limits<std::int64_t>::max());
  // A layer's gradient partition may be empty (FSMoE sends its bytes with the next layer's).
  for (int i = 0; i < knobs.grad_partition_bytes_size(); ++i)
    if (knobs.grad_partition_bytes(i) < 0)
      throw refuse(fmt::format("knobs.grad_partition_bytes[{}]", i),
                   fmt::format("must not be negative, got {}", knobs.grad_partition_bytes(i)));
  if (knobs.has_micro_batch_size()) check_count("knobs.micro_batch_size", knobs.micro_batch_size(), model::kMaxBatch);
  if (knobs.has_parallelism()) {
    const pb::Parallelism& q = knobs.parallelism();
    for (const auto& [field, value] : {std::pair{"tp", q.tp()}, {"cp", q.cp()}, {"dp", q.dp()}, {"pp", q.pp()},
                                       {"ep", q.ep()}, {"etp", q.etp()}, {"edp", q.edp()}, {"vpp", q.vpp()}})
      check_count(std::string("knobs.parallelism.") + field, value, model::kMaxParallel);
  }
  model::PlanSpec s;
  s.scenario = p.scenario();
  s.scenario_ref = p.scenario_ref();
  s.scenario_overrides.assign(p.scenario_overrides().begin(), p.scenario_overrides().end());
  s.family = p.family();
  s.schedule = p.schedule();
  s.iteration_ms = p.iteration_ms();
  s.baseline_ms = p.baseline_ms();
  s.speedup = p.speedup();
  const pb::Knobs& k = p.knobs();
  if (k.has_degree()) s.knobs.degree = k.degree();
  if (k.has_degree_forward()) s.knobs.degree_forward = k.degree_forward();
  if (k.has_degree_backward()) s.knobs.degree_backward = k.degree_backward();
  s.knobs.slicing_tokens.assign(k.slicing().begin(), k.slicing().end());
  if (k.has_ar_chunk_bytes()) s.knobs.ar_chunk_bytes = k.ar_chunk_bytes();
  s.knobs.grad_partition_bytes.assign(k.grad_partition_bytes().begin(), k.grad_partition_bytes().end());
  if (k.has_micro_batch_size()) s.knobs.micro_batch_size = k.micro_batch_size();
  if (k.has_precision()) {
    const std::optional<model::Precision> precision = model::precision_from_string(k.precision());
    if (!precision)
      throw Error(ErrorKind::Input, fmt::format("{} is not a precision", quoted_for_error(k.precision())),
                  "knobs.precision", SourceLocation{path});
    s.knobs.precision = *precision;
  }
  if (k.has_recompute()) {
    try {
      s.knobs.recompute = model::parse_recompute(k.recompute(), "knobs.recompute");
    } catch (const Error& e) {
      throw e.located(SourceLocation{path});
    }
  }
  if (k.has_parallelism()) {
    const pb::Parallelism& q = k.parallelism();
    model::ParallelSpec par;
    par.tp = q.tp();
    par.cp = q.cp();
    par.dp = q.dp();
    par.pp = q.pp();
    par.ep = q.ep();
    par.etp = q.etp();
    par.edp = q.edp();
    par.vpp = q.vpp();
    par.sequence_parallel = q.sequence_parallel();
    if (q.has_pipeline_layout()) {
      model::PipelineLayout layout =
          model::read_pipeline_layout(q.pipeline_layout(), "knobs.parallelism.pipeline_layout");
      par.stage_layers = std::move(layout.stage_layers);
      par.layout_mtp_blocks = layout.mtp_blocks;
    }
    s.knobs.parallelism = par;
  }
  return s;
}

Override knob(const std::string& field, const std::string& value, const std::string& plan_path,
              const std::string& knob_field) {
  Override o{field, value};
  o.origin.file = plan_path;
  o.origin_field = knob_field;
  return o;
}

}  // namespace

model::PlanSpec load_plan_text(const std::string& path, const std::string& text) {
  pb::Plan plan;
  parse_text_proto(path, text, plan);
  return plan_to_spec(plan, path);
}

model::PlanSpec load_plan(const std::string& name_or_path) {
  const std::string path = resolve_path(FileKind::Plan, name_or_path);
  return load_plan_text(path, read_text_file(path));
}

std::vector<Override> plan_knob_overrides(const model::PlanSpec& plan, const std::string& plan_path) {
  const model::FamilyRules* family = model::find_family_rules(plan.family);
  if (family == nullptr)
    throw Error(ErrorKind::Input,
                fmt::format("unknown family {} ({})", quoted_for_error(plan.family),
                            model::join_names(model::family_names())),
                "family", SourceLocation{plan_path});
  std::vector<model::KnobSetting> settings;
  try {
    settings = family->plan_knob_settings(plan);
  } catch (const Error& e) {
    throw e.located(SourceLocation{plan_path});
  }
  std::vector<Override> out;
  for (const model::KnobSetting& k : settings) out.push_back(knob(k.field, k.value, plan_path, k.plan_field));
  return out;
}

namespace {

// The plan's scenario with its overrides, then its knobs when `knobs`, then `overrides`.
model::ScenarioSpec plan_scenario(const std::string& path, const model::PlanSpec& plan, bool knobs,
                                  const std::vector<Override>& overrides) {
  std::vector<Override> all;
  for (std::size_t i = 0; i < plan.scenario_overrides.size(); ++i) {
    const std::string field = fmt::format("scenario_overrides[{}]", i);
    Override o;
    try {
      o = parse_override(plan.scenario_overrides[i]);
    } catch (const Error& e) {
      // The plan's entry, not a --set the command line never gave.
      throw Error(ErrorKind::Input, e.reason(), field, SourceLocation{path});
    }
    o.origin.file = path;
    o.origin_field = field;
    all.push_back(std::move(o));
  }
  if (knobs)
    for (Override& o : plan_knob_overrides(plan, path)) all.push_back(std::move(o));
  all.insert(all.end(), overrides.begin(), overrides.end());
  model::ScenarioSpec spec = load_scenario(resolve_reference_path(FileKind::Scenario, plan.scenario_ref, path), all);
  if (spec.schedule.family != plan.family)
    throw Error(ErrorKind::Input,
                fmt::format("the plan is for a {} scenario, but {} is now of family {}", plan.family,
                            plan.scenario_ref, spec.schedule.family),
                "family", SourceLocation{path});
  return spec;
}

}  // namespace

model::ScenarioSpec load_planned_scenario(const std::string& plan_path, const std::vector<Override>& overrides) {
  const std::string path = resolve_path(FileKind::Plan, plan_path);
  return plan_scenario(path, load_plan(path), true, overrides);
}

model::ScenarioSpec load_planned_scenario_text(const std::string& path, const std::string& text) {
  return plan_scenario(path, load_plan_text(path, text), true, {});
}

model::ScenarioSpec load_plan_scenario(const std::string& plan_path) {
  const std::string path = resolve_path(FileKind::Plan, plan_path);
  return plan_scenario(path, load_plan(path), false, {});
}

model::ScenarioSpec load_scenario_or_plan(const std::string& name_or_path, const std::vector<Override>& overrides) {
  bool is_plan = false;
  try {
    is_plan = detect_kind(resolve_any_path(name_or_path)) == FileKind::Plan;
  } catch (const Error&) {
    // Not a file of a kind we can tell: load_scenario says what is wrong with it.
  }
  return is_plan ? load_planned_scenario(name_or_path, overrides) : load_scenario(name_or_path, overrides);
}

}  // namespace moeplan::io
