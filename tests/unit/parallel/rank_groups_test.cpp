#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <optional>

#include <moeplan/core/error.hpp>
#include <moeplan/parallel/rank_groups.hpp>

using namespace moeplan;
using parallel::RankGroups;

namespace {

// Groups of consecutive ranks spaced `stride` apart: {start, start+stride, ...}.
RankGroups strided(std::int64_t world, std::int64_t size, std::int64_t stride) {
  RankGroups out;
  std::vector<bool> used(static_cast<std::size_t>(world), false);
  for (std::int64_t r = 0; r < world; ++r) {
    if (used[static_cast<std::size_t>(r)]) continue;
    std::vector<std::int64_t> g;
    for (std::int64_t i = 0; i < size; ++i) {
      g.push_back(r + i * stride);
      used[static_cast<std::size_t>(r + i * stride)] = true;
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace

TEST_CASE("parallel::make_mapping follows Megatron's default order tp-cp-ep-dp-pp", "[parallel]") {
  // --world 16 --tp 2 --cp 2 --pp 2 --ep 4 --etp 1: dp = edp = 2.
  const parallel::Mapping m = parallel::make_mapping({16, 2, 2, 2, 4, 1, 1, "tp-cp-ep-dp-pp", std::nullopt});
  CHECK(m.dp == 2);
  CHECK(m.edp == 2);
  CHECK(m.attention.at("tp") == strided(16, 2, 1));  // [0,1],[2,3],..
  CHECK(m.attention.at("cp") == strided(16, 2, 2));  // [0,2],[1,3],..
  CHECK(m.attention.at("dp") == strided(16, 2, 4));  // [0,4],[1,5],..
  CHECK(m.attention.at("pp") == strided(16, 2, 8));  // [0,8],[1,9],..
  // dp x cp: the ranks sharing a tp index and a pipeline stage, cp fastest
  // (Megatron's get_ranks('dp-cp')): stage 0 holds 0..7, tp pairs (2j, 2j + 1).
  CHECK(m.attention.at("dp-cp") == RankGroups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}});
  CHECK(m.expert.at("ep") == strided(16, 4, 1));   // [0,1,2,3],[4,5,6,7],..
  CHECK(m.expert.at("edp") == strided(16, 2, 4));  // [0,4],[1,5],..
  CHECK(m.expert.at("pp") == strided(16, 2, 8));
  CHECK(m.expert.at("etp").size() == 16);  // singletons
}

TEST_CASE("parallel::make_mapping with order tp-cp-ep-pp-dp equals the paper's Listing 1", "[parallel]") {
  // generate_mappings(64, tp=2, cp=2, ep=2, etp=2, pp=2): attention ranks are
  // reshape(dp, pp, cp, tp), MoE ranks reshape(moe_dp, pp, ep, tp), tp fastest.
  const std::int64_t world = 64, tp = 2, cp = 2, ep = 2, etp = 2, pp = 2;
  const std::int64_t dp = world / (tp * cp * pp), moe_dp = world / (etp * ep * pp);
  auto attention_rank = [&](std::int64_t d, std::int64_t p, std::int64_t c, std::int64_t t) {
    return ((d * pp + p) * cp + c) * tp + t;
  };
  auto moe_rank = [&](std::int64_t d, std::int64_t p, std::int64_t e, std::int64_t t) {
    return ((d * pp + p) * ep + e) * etp + t;
  };
  // rearrange "dp pp cp tp -> (dp pp cp) tp": one group per (dp, pp, cp) in that nesting order.
  RankGroups tp_groups, cp_groups, pp_groups, dp_groups, dp_cp_groups, etp_groups, ep_groups, mpp_groups, edp_groups;
  for (std::int64_t d = 0; d < dp; ++d)
    for (std::int64_t p = 0; p < pp; ++p)
      for (std::int64_t c = 0; c < cp; ++c)
        tp_groups.push_back({attention_rank(d, p, c, 0), attention_rank(d, p, c, 1)});
  for (std::int64_t d = 0; d < dp; ++d)
    for (std::int64_t p = 0; p < pp; ++p)
      for (std::int64_t t = 0; t < tp; ++t)
        cp_groups.push_back({attention_rank(d, p, 0, t), attention_rank(d, p, 1, t)});
  for (std::int64_t d = 0; d < dp; ++d)
    for (std::int64_t c = 0; c < cp; ++c)
      for (std::int64_t t = 0; t < tp; ++t)
        pp_groups.push_back({attention_rank(d, 0, c, t), attention_rank(d, 1, c, t)});
  for (std::int64_t p = 0; p < pp; ++p)
    for (std::int64_t c = 0; c < cp; ++c)
      for (std::int64_t t = 0; t < tp; ++t) {
        std::vector<std::int64_t> g;
        for (std::int64_t d = 0; d < dp; ++d) g.push_back(attention_rank(d, p, c, t));
        dp_groups.push_back(g);
      }
  // "dp pp cp tp -> (pp tp) (dp cp)": the data-parallel group with context parallelism.
  for (std::int64_t p = 0; p < pp; ++p)
    for (std::int64_t t = 0; t < tp; ++t) {
      std::vector<std::int64_t> g;
      for (std::int64_t d = 0; d < dp; ++d)
        for (std::int64_t c = 0; c < cp; ++c) g.push_back(attention_rank(d, p, c, t));
      dp_cp_groups.push_back(g);
    }
  for (std::int64_t d = 0; d < moe_dp; ++d)
    for (std::int64_t p = 0; p < pp; ++p)
      for (std::int64_t e = 0; e < ep; ++e) etp_groups.push_back({moe_rank(d, p, e, 0), moe_rank(d, p, e, 1)});
  for (std::int64_t d = 0; d < moe_dp; ++d)
    for (std::int64_t p = 0; p < pp; ++p)
      for (std::int64_t t = 0; t < etp; ++t) ep_groups.push_back({moe_rank(d, p, 0, t), moe_rank(d, p, 1, t)});
  for (std::int64_t d = 0; d < moe_dp; ++d)
    for (std::int64_t e = 0; e < ep; ++e)
      for (std::int64_t t = 0; t < etp; ++t) mpp_groups.push_back({moe_rank(d, 0, e, t), moe_rank(d, 1, e, t)});
  for (std::int64_t p = 0; p < pp; ++p)
    for (std::int64_t e = 0; e < ep; ++e)
      for (std::int64_t t = 0; t < etp; ++t) {
        std::vector<std::int64_t> g;
        for (std::int64_t d = 0; d < moe_dp; ++d) g.push_back(moe_rank(d, p, e, t));
        edp_groups.push_back(g);
      }
  const parallel::Mapping m = parallel::make_mapping({world, tp, cp, pp, ep, etp, 1, "tp-cp-ep-pp-dp", std::nullopt});
  auto sorted = [](RankGroups g) {
    std::sort(g.begin(), g.end());
    return g;
  };
  // Megatron and einops enumerate groups in different orders; the groups themselves must match.
  CHECK(sorted(m.attention.at("tp")) == sorted(tp_groups));
  CHECK(sorted(m.attention.at("cp")) == sorted(cp_groups));
  CHECK(sorted(m.attention.at("pp")) == sorted(pp_groups));
  CHECK(sorted(m.attention.at("dp")) == sorted(dp_groups));
  CHECK(sorted(m.attention.at("dp-cp")) == sorted(dp_cp_groups));
  CHECK(sorted(m.expert.at("etp")) == sorted(etp_groups));
  CHECK(sorted(m.expert.at("ep")) == sorted(ep_groups));
  CHECK(sorted(m.expert.at("pp")) == sorted(mpp_groups));
  CHECK(sorted(m.expert.at("edp")) == sorted(edp_groups));
}

TEST_CASE("parallel::make_mapping's dp-cp groups match Megatron's loop before RankGenerator", "[parallel]") {
  // Megatron-Core before RankGenerator (order tp-cp-dp-pp) built the
  // data-parallel groups with context parallelism stage by stage: for stage i
  // (ranks i * world / pp up to the next stage) and tp index j, the ranks
  // start + j, start + j + tp, ... A second formulation of the same groups.
  const std::int64_t world = 64, tp = 2, cp = 4, pp = 2;  // dp = 4, dp x cp = 16
  RankGroups expected;
  for (std::int64_t i = 0; i < pp; ++i)
    for (std::int64_t j = 0; j < tp; ++j) {
      std::vector<std::int64_t> g;
      for (std::int64_t r = i * world / pp + j; r < (i + 1) * world / pp; r += tp) g.push_back(r);
      expected.push_back(g);
    }
  const parallel::Mapping m = parallel::make_mapping({world, tp, cp, pp, 1, std::nullopt, 1, "tp-cp-ep-dp-pp", 8});
  CHECK(m.attention.at("dp-cp") == expected);
  CHECK(m.attention.at("dp-cp").front().size() == 16);
  // With cp = 1 the group is the data-parallel group itself.
  const parallel::Mapping no_cp = parallel::make_mapping({world, tp, 1, pp, 1, std::nullopt, 1, "tp-cp-ep-dp-pp", 8});
  CHECK(no_cp.attention.at("dp-cp") == no_cp.attention.at("dp"));
}

TEST_CASE("parallel::make_mapping names each invalid mapping", "[parallel]") {
  using Q = parallel::MappingRequest;
  auto error_of = [](const Q& q) {
    try {
      parallel::make_mapping(q);
    } catch (const Error& e) {
      return format_error(e);
    }
    return std::string();
  };
  CHECK(error_of({16, 3, 1, 1, 1, std::nullopt, 1, "tp-cp-ep-dp-pp", std::nullopt}) ==
        "parallelism.dp: world 16 is not divisible by tp*cp*pp = 3");
  CHECK(error_of({16, 2, 1, 1, 3, 1, 1, "tp-cp-ep-dp-pp", std::nullopt}) ==
        "parallelism.edp: world 16 is not divisible by etp*ep*pp = 3");
  CHECK(error_of({16, 1, 1, 1, 4, std::nullopt, 1, "tp-cp-ep-dp-pp", 6}) ==
        "parallelism.ep: num_experts 6 is not divisible by ep 4");
  CHECK(error_of({16, 1, 1, 1, 1, std::nullopt, 2, "tp-cp-ep-dp-pp", std::nullopt}) ==
        "parallelism.vpp: virtual pipeline stages need pp > 1");
  CHECK(error_of({16, 2, 1, 1, 1, std::nullopt, 1, "cp-ep-dp-pp", std::nullopt}) ==
        "parallelism.order: the order 'cp-ep-dp-pp' leaves out tp of size 2");
  CHECK(error_of({16, 2, 1, 1, 1, std::nullopt, 1, "tp-xp-dp-pp", std::nullopt}) ==
        "parallelism.order: unknown dimension 'xp' in 'tp-xp-dp-pp' (tp, cp, ep, dp, pp)");
  CHECK(error_of({16, 2, 1, 1, 1, std::nullopt, 1, "tp-tp-dp-pp", std::nullopt}) ==
        "parallelism.order: dimension 'tp' appears twice in 'tp-tp-dp-pp'");
  CHECK(error_of({16, 2, 1, 2, 8, 1, 1, "tp-cp-ep-pp-dp", std::nullopt})
            .find("attention and expert pipeline groups differ") != std::string::npos);
  // The three ways out of that rule are each accepted.
  CHECK(error_of({16, 2, 1, 2, 8, 1, 1, "tp-cp-ep-dp-pp", std::nullopt}).empty());  // order ends in pp
  CHECK(error_of({16, 2, 1, 1, 8, 1, 1, "tp-cp-ep-pp-dp", std::nullopt}).empty());  // pp = 1
  CHECK(error_of({16, 2, 1, 2, 2, 1, 1, "tp-cp-ep-pp-dp", std::nullopt}).empty());  // etp*ep = tp*cp: edp = dp = 4
  // etp defaults to tp.
  CHECK(parallel::make_mapping({16, 4, 1, 1, 2, std::nullopt, 1, "tp-cp-ep-dp-pp", std::nullopt}).etp == 4);
}

TEST_CASE("parallel::make_mapping with first_groups_only gives each full mapping's first groups", "[parallel]") {
  // Second formulation: the full mapping (every group) of each request, whose
  // front groups and pipeline-group check the cheap one must reproduce, over
  // every order of the five dimensions and sizes that make the attention and
  // expert pipeline groups differ for some orders (edp != dp, pp > 1).
  std::vector<std::string> dims{"cp", "dp", "ep", "pp", "tp"};
  int compared = 0, refused = 0;
  do {
    std::string order;
    for (const std::string& d : dims) order += (order.empty() ? "" : "-") + d;
    for (const auto& [tp, cp, pp, ep, etp] : std::vector<std::array<std::int64_t, 5>>{
             {2, 2, 2, 4, 1}, {1, 1, 4, 8, 2}, {4, 1, 2, 2, 4}, {2, 1, 1, 8, 1}}) {
      parallel::MappingRequest q;
      q.world = 64;
      q.tp = tp;
      q.cp = cp;
      q.pp = pp;
      q.ep = ep;
      q.etp = etp;
      q.order = order;
      std::optional<parallel::Mapping> full;
      std::string full_error;
      try {
        full = parallel::make_mapping(q);
      } catch (const Error& e) {
        full_error = e.reason();
      }
      q.first_groups_only = true;
      INFO(order << " tp " << tp << " cp " << cp << " pp " << pp << " ep " << ep << " etp " << etp);
      if (!full) {
        CHECK_THROWS_WITH(parallel::make_mapping(q), full_error);
        ++refused;
        continue;
      }
      const parallel::Mapping first = parallel::make_mapping(q);
      for (const auto* kinds : {&full->attention, &full->expert}) {
        const auto& cheap = kinds == &full->attention ? first.attention : first.expert;
        for (const auto& [name, groups] : *kinds) {
          REQUIRE(cheap.at(name).size() == 1);
          CHECK(cheap.at(name).front() == groups.front());
        }
      }
      ++compared;
    }
  } while (std::next_permutation(dims.begin(), dims.end()));
  // 120 orders x 4 size sets; some orders differ in pipeline groups, most not.
  CHECK(compared + refused == 480);
  CHECK(refused > 0);
  CHECK(compared > 0);
}
