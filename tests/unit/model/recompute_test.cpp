// Megatron-Core's recomputation options (--recompute-granularity, -modules,
// -method, -num-layers): their short form and the rules that tie them to a model.
#include <catch2/catch.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/model/recompute.hpp>

using namespace moeplan;

namespace {

// A model with MLA, MoE blocks after one dense block, and a shared expert.
model::ModelSpec deepseek_like() {
  model::ModelSpec m;
  m.num_layers = 2;
  m.moe.num_experts = 4;
  m.moe.num_shared_experts = 1;
  m.moe.first_k_dense = 1;
  m.moe_layer = {false, true};
  m.mla = model::MlaSpec{};
  return m;
}

// The reason a spec is refused for, with its field, or "accepted".
std::string refusal(const model::ModelSpec& m, const model::RecomputeSpec& r) {
  try {
    model::validate_recompute(m, r);
  } catch (const Error& e) {
    return e.field() + ": " + e.reason();
  }
  return "accepted";
}

model::RecomputeSpec spec(const std::string& text) { return model::parse_recompute(text, "recompute"); }

}  // namespace

TEST_CASE("model::parse_recompute reads the short form and recompute_text writes it back", "[model][recompute]") {
  const model::RecomputeSpec none = spec("none");
  CHECK(none.granularity == "none");
  CHECK(model::recomputed_modules(none).empty());
  // selective without modules is Megatron's default, the attention core.
  CHECK(model::recomputed_modules(spec("selective")) == std::vector<std::string>{"core_attn"});
  const model::RecomputeSpec modules = spec("selective:mla_up_proj+mlp+moe_act");
  CHECK(modules.modules == std::vector<std::string>{"mla_up_proj", "mlp", "moe_act"});
  CHECK(model::recomputes_module(modules, "mlp"));
  CHECK_FALSE(model::recomputes_module(modules, "core_attn"));  // listed modules replace the default
  const model::RecomputeSpec block = spec("full:block:2");
  CHECK(block.method == "block");
  CHECK(block.num_layers == 2);
  CHECK(model::recomputed_modules(block).empty());  // full recomputes blocks, not modules
  for (const char* text : {"none", "selective", "selective:moe+mlp", "full", "full:block:0", "full:uniform:4"})
    CHECK(model::recompute_text(spec(text)) == text);
  // full:uniform:1 is full's default, written short.
  CHECK(model::recompute_text(spec("full:uniform:1")) == "full");
  for (const char* bad : {"some", "none:x", "selective:", "full:block", "full:block:x", "full:block:-1"})
    CHECK_THROWS_AS(spec(bad), Error);
}

TEST_CASE("model::validate_recompute refuses what cannot act, naming the field", "[model][recompute]") {
  const model::ModelSpec ds = deepseek_like();
  CHECK(refusal(ds, spec("selective:mla_up_proj+mlp+moe_act+layernorm+shared_experts")) == "accepted");
  CHECK(refusal(ds, spec("full:block:0")) == "accepted");
  CHECK(refusal(ds, spec("selective:attn")).rfind("schedule.recompute_modules: unknown module", 0) == 0);
  CHECK(refusal(ds, spec("selective:mlp+mlp")) == "schedule.recompute_modules: mlp is listed twice");
  CHECK(refusal(ds, spec("selective:moe+moe_act")).rfind("schedule.recompute_modules: moe_act is recomputed inside", 0) ==
        0);
  model::RecomputeSpec modules_with_full = spec("full");
  modules_with_full.modules = {"mlp"};
  CHECK(refusal(ds, modules_with_full).rfind("schedule.recompute_modules:", 0) == 0);
  CHECK(refusal(ds, spec("full:diagonal:1")).rfind("schedule.recompute_method:", 0) == 0);
  CHECK(refusal(ds, spec("full:uniform:0")).rfind("schedule.recompute_num_layers:", 0) == 0);
  // Parts the model lacks: plain attention, no shared experts, every block MoE, a dense model.
  model::ModelSpec plain = ds;
  plain.mla.reset();
  plain.moe.num_shared_experts = 0;
  plain.moe.first_k_dense = 0;
  plain.moe_layer = {true, true};
  CHECK(refusal(plain, spec("selective:mla_up_proj")).find("no MLA") != std::string::npos);
  CHECK(refusal(plain, spec("selective:shared_experts")).find("no shared experts") != std::string::npos);
  CHECK(refusal(plain, spec("selective:mlp")).find("no dense MLP") != std::string::npos);
  model::ModelSpec dense = plain;
  dense.moe = model::MoeSpec{};
  dense.moe_layer = {false, false};
  CHECK(refusal(dense, spec("selective:moe_act")).find("dense") != std::string::npos);
  CHECK(refusal(dense, spec("selective:mlp")) == "accepted");
}
