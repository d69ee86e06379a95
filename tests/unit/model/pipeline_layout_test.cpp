// Megatron-LM's pipeline layouts (--pipeline-model-parallel-layout) and the
// uneven split the mapping search tries when layers do not divide.
#include <catch2/catch.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/model/pipeline_layout.hpp>

using namespace moeplan;
using Layers = std::vector<std::int64_t>;

namespace {
std::string refusal(const std::string& text) {
  try {
    model::parse_pipeline_layout(text, "parallelism.pipeline_layout");
  } catch (const Error& e) {
    CHECK(e.field() == "parallelism.pipeline_layout");
    return e.reason();
  }
  return "accepted";
}
}  // namespace

TEST_CASE("model::parse_pipeline_layout reads Megatron's layouts", "[model][layout]") {
  // DeepSeek-V3's 61 layers over pp x vpp = 16 in NVIDIA's recipe: the
  // embedding and 4 blocks, 14 stages of 4, one block and the loss: 4 + 56 + 1.
  const Layers dsv3 = model::parse_pipeline_layout("Et*4|(t*4|)*14tL", "f");
  REQUIRE(dsv3.size() == 16);
  CHECK(dsv3.front() == 4);
  CHECK(dsv3.back() == 1);
  CHECK(dsv3[7] == 4);
  // Qwen3-235B's 94 layers with the embedding and loss counted as layers over 24 stages: 3, 22 x 4, 3.
  const Layers qwen = model::parse_pipeline_layout("Ettt|(tttt|)*22tttL", "f");
  CHECK(qwen == Layers{3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3});
  // Spaces and commas are ignored; an empty stage is allowed (Megatron's "E|t|L" style).
  CHECK(model::parse_pipeline_layout("E, t*2 | | tL", "f") == Layers{2, 0, 1});
  CHECK(model::parse_pipeline_layout("((t|)*2)*3t", "f") == Layers{1, 1, 1, 1, 1, 1, 1});
}

TEST_CASE("model::parse_pipeline_layout refuses what Megatron refuses, by reason", "[model][layout]") {
  CHECK_THAT(refusal("tE|t"), Catch::Contains("'E' (the embedding) must open the first stage"));
  CHECK_THAT(refusal("t|E"), Catch::Contains("'E'"));
  CHECK_THAT(refusal("tL|t"), Catch::Contains("'L' (the loss and LM head) must close the last stage"));
  CHECK_THAT(refusal("(tt|t"), Catch::Contains("not closed"));
  CHECK_THAT(refusal("t)"), Catch::Contains("unexpected ')'"));
  CHECK_THAT(refusal("t*0"), Catch::Contains("repeat count of at least 1"));
  CHECK_THAT(refusal("t*"), Catch::Contains("repeat count"));
  CHECK_THAT(refusal("tx"), Catch::Contains("'x' at character 2 is not a layout symbol"));
  // MTP blocks: after every transformer block, on the last stage.
  CHECK_THAT(refusal("Etm|tL"), Catch::Contains("must be on the last stage"));
  CHECK_THAT(refusal("Et|mtL"), Catch::Contains("must follow every transformer block"));
  CHECK_THAT(refusal("t*99999999999"), Catch::Contains("repeat count above"));
  CHECK_THAT(refusal("(t*1000)*2000"), Catch::Contains("expands to more than"));
  CHECK_THAT(refusal(std::string(5000, 't')), Catch::Contains("at most 4096"));
}

TEST_CASE("model::read_pipeline_layout counts the MTP blocks of the last stage", "[model][layout]") {
  // DeepSeek-V3 on H100 in Megatron-Bridge's 25.09 recipe: 61 blocks over 32
  // stages, the embedding and one block, 30 stages of two, the MTP block and the loss.
  const model::PipelineLayout h100 = model::read_pipeline_layout("Et|(tt|)*30mL", "f");
  REQUIRE(h100.stage_layers.size() == 32);
  CHECK(h100.stage_layers.front() == 1);
  CHECK(h100.stage_layers[30] == 2);
  CHECK(h100.stage_layers.back() == 0);  // the MTP block is not a transformer block of the split
  CHECK(h100.mtp_blocks == 1);
  CHECK(model::read_pipeline_layout("Et*4|(t*4|)*14tmL", "f").mtp_blocks == 1);
  CHECK(model::read_pipeline_layout("Et|tm*2L", "f").mtp_blocks == 2);
  CHECK(model::read_pipeline_layout("Et|tL", "f").mtp_blocks == 0);
  CHECK(model::pipeline_layout_text({1, 2, 0}, 1) == "Et|t*2|mL");
  CHECK(model::pipeline_layout_text({1, 1}, 2) == "Et|tm*2L");
  const model::PipelineLayout back = model::read_pipeline_layout(model::pipeline_layout_text({1, 1}, 2), "f");
  CHECK(back.stage_layers == Layers{1, 1});
  CHECK(back.mtp_blocks == 2);
}

TEST_CASE("model::pipeline_layout_text writes a layout that reads back", "[model][layout]") {
  CHECK(model::pipeline_layout_text({3, 4, 0, 1}) == "Et*3|t*4||tL");
  for (const Layers& l : {Layers{3, 4, 0, 1}, Layers{1}, Layers{2, 2}, Layers{0, 5, 7}})
    CHECK(model::parse_pipeline_layout(model::pipeline_layout_text(l), "f") == l);
}

TEST_CASE("model::uneven_pipeline_layout: ceil per stage, the deficit from the ends inwards", "[model][layout]") {
  // 94 over 24: ceil 4, deficit 2: last and first 3 (Megatron's embedding and
  // loss counted as layers: 96 / 24 = 4, less one at each end).
  CHECK(model::uneven_pipeline_layout(94, 24) ==
        Layers{3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3});
  // 61 over 16: ceil 4, deficit 3: last, first, second last.
  CHECK(model::uneven_pipeline_layout(61, 16) == Layers{3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3});
  CHECK(model::uneven_pipeline_layout(8, 3) == Layers{3, 3, 2});
  CHECK(model::uneven_pipeline_layout(5, 4) == Layers{1, 2, 1, 1});
  // Even splits are no layout; a split leaving a stage empty is not tried.
  CHECK(model::uneven_pipeline_layout(64, 16).empty());
  CHECK(model::uneven_pipeline_layout(2, 3).empty());
  CHECK(model::uneven_pipeline_layout(3, 2) == Layers{2, 1});
}
