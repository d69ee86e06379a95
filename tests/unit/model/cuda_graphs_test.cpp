// schedule.cuda_graphs: the text of Megatron-Core's CUDA graphs and its refusals.
#include <catch2/catch.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/model/cuda_graphs.hpp>

using namespace moeplan;

TEST_CASE("model::parse_cuda_graphs reads none, full_iteration and '+'-joined modules", "[model][cuda_graphs]") {
  CHECK_FALSE(model::parse_cuda_graphs("none").any());
  const model::CudaGraphs full = model::parse_cuda_graphs("full_iteration");
  CHECK(full.full_iteration);
  CHECK_FALSE(full.attn);
  const model::CudaGraphs attn = model::parse_cuda_graphs("attn");
  CHECK(attn.attn);
  CHECK_FALSE(attn.moe_router);
  CHECK_FALSE(attn.full_iteration);
  // Any order in, Megatron-Core's order out (attn, moe_router, moe_preprocess).
  const model::CudaGraphs all = model::parse_cuda_graphs("moe_preprocess+attn+moe_router");
  CHECK(all.attn);
  CHECK(all.moe_router);
  CHECK(all.moe_preprocess);
  CHECK(model::cuda_graphs_text(all) == "attn+moe_router+moe_preprocess");
  CHECK(model::cuda_graphs_text(model::parse_cuda_graphs("moe_router+moe_preprocess")) == "moe_router+moe_preprocess");
  CHECK(model::cuda_graphs_text(full) == "full_iteration");
  CHECK(model::cuda_graphs_text(model::CudaGraphs{}) == "none");
}

TEST_CASE("model::parse_cuda_graphs refuses what it cannot read or price", "[model][cuda_graphs]") {
  const auto refuses = [](const char* text, const char* why) {
    INFO(text);
    try {
      model::parse_cuda_graphs(text);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Input);
      CHECK(e.field() == "schedule.cuda_graphs");
      CHECK_THAT(e.reason(), Catch::Contains(why));
    }
  };
  refuses("mlp", "unknown part");
  refuses("", "unknown part");
  refuses("attn+", "unknown part");
  refuses("attn+attn", "listed twice");
  refuses("full_iteration+attn", "stands alone");
  refuses("attn+none", "stands alone");
  // Megatron-Core captures the preprocessing with the router.
  refuses("moe_preprocess", "needs moe_router");
  // One part of the host-issue model: a graph of the router alone has no price.
  refuses("moe_router", "cannot be priced");
  refuses("attn+moe_router", "cannot be priced");
}
