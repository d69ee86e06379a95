// The routing sampler (docs/cost-model.md, "Uneven expert load"): every
// expected value is derived by hand in the comment beside it.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <moeplan/cost/routing.hpp>
#include <moeplan/io/loader.hpp>

using namespace moeplan;

namespace {

model::ScenarioSpec tiny(const std::vector<io::Override>& overrides) {
  // flowmoe-gpt2-tiny-moe-c1: 16 GPUs, ep 16, 16 experts top-2, capacity 1.0,
  // 4 x 256 = 1024 tokens per rank, d_model 256, fp32, 12 MoE layers.
  return io::load_scenario("flowmoe-gpt2-tiny-moe-c1", overrides);
}

}  // namespace

TEST_CASE("cost::zipf_probabilities for E = 4, s = 1", "[cost][routing]") {
  // 1, 1/2, 1/3, 1/4 sum to 25/12: p = 12/25, 6/25, 4/25, 3/25.
  const std::vector<double> p = cost::zipf_probabilities(4, 1.0);
  REQUIRE(p.size() == 4);
  const double expected[] = {12.0 / 25, 6.0 / 25, 4.0 / 25, 3.0 / 25};
  for (std::size_t k = 0; k < 4; ++k) CHECK(p[k] == Approx(expected[k]).epsilon(1e-14));
}

TEST_CASE("cost::portable_exp and portable_log agree with the closed forms", "[cost][routing]") {
  CHECK(cost::portable_log(1.0) == 0.0);                                  // ln 1 = 0: m = 1, t = 0, e = 0... exactly
  CHECK(cost::portable_log(8.0) == Approx(3 * 0.6931471805599453).epsilon(1e-15));  // ln 8 = 3 ln 2
  CHECK(cost::portable_exp(0.0) == 1.0);                                  // n = 0, r = 0: the series' first term
  CHECK(cost::portable_exp(-0.6931471805599453) == Approx(0.5).epsilon(1e-15));  // e^-ln2 = 1/2
  CHECK(cost::portable_exp(-1000.0) == 0.0);                              // below the smallest subnormal
  // 3^-1.5 = 1 / (3 sqrt 3) = 0.19245008972987526
  CHECK(cost::portable_exp(-1.5 * cost::portable_log(3.0)) == Approx(0.19245008972987526).epsilon(1e-14));
}

TEST_CASE("cost::sample_binomial matches the binomial's mean and variance", "[cost][routing]") {
  SECTION("exact inversion: n = 40, p = 0.1 (n p = 4 < 30)") {
    // Mean n p = 4, variance n p (1 - p) = 3.6. Over T = 20000 draws the
    // sample mean has standard deviation sqrt(3.6 / 20000) = 0.0134: 5 sigma = 0.067.
    cost::Rng rng(7);
    const int T = 20000;
    double sum = 0, sum2 = 0;
    for (int i = 0; i < T; ++i) {
      const double x = static_cast<double>(cost::sample_binomial(40, 0.1, rng));
      sum += x;
      sum2 += x * x;
    }
    const double mean = sum / T;
    CHECK(std::abs(mean - 4.0) < 0.067);
    // Sample variance: its standard error is about sqrt((mu4 - sigma^4) / T) with
    // mu4 = 3 sigma^4 + sigma^2 (1 - 6 p q) = 38.88 + 3.6 x 0.46 = 40.54:
    // sqrt((40.54 - 12.96) / 20000) = 0.037; 5 sigma = 0.19.
    CHECK(std::abs(sum2 / T - mean * mean - 3.6) < 0.19);
  }
  SECTION("exact inversion: n = 2, p = 0.5 gives 0, 1, 2 with 1/4, 1/2, 1/4") {
    // Each frequency over T = 40000 has standard deviation at most
    // sqrt(0.25 x 0.75 / 40000) = 0.0022: 5 sigma = 0.011.
    cost::Rng rng(11);
    const int T = 40000;
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < T; ++i) ++seen[cost::sample_binomial(2, 0.5, rng)];
    CHECK(std::abs(seen[0] / double(T) - 0.25) < 0.011);
    CHECK(std::abs(seen[1] / double(T) - 0.5) < 0.011);
    CHECK(std::abs(seen[2] / double(T) - 0.25) < 0.011);
  }
  SECTION("normal approximation: n = 100000, p = 12/25 (n p = 48000)") {
    // Variance n p (1 - p) = 100000 x 0.48 x 0.52 = 24960, sd 158. Over T = 400
    // draws the mean's sd is 158 / 20 = 7.9: 5 sigma = 39.5.
    cost::Rng rng(3);
    const int T = 400;
    double sum = 0;
    for (int i = 0; i < T; ++i) sum += static_cast<double>(cost::sample_binomial(100000, 0.48, rng));
    CHECK(std::abs(sum / T - 48000.0) < 39.5);
  }
  SECTION("edges") {
    cost::Rng rng(1);
    CHECK(cost::sample_binomial(100, 0.0, rng) == 0);
    CHECK(cost::sample_binomial(100, 1.0, rng) == 100);
    CHECK(cost::sample_binomial(0, 0.5, rng) == 0);
  }
}

TEST_CASE("cost::sample_multinomial converges to p and keeps every slot", "[cost][routing]") {
  // p = Zipf(4, s = 1) = 12/25, 6/25, 4/25, 3/25; n = 10000 slots, T = 200 draws.
  // Expert e's count is binomial(n, p_e): sd sqrt(n p_e (1 - p_e)), at most
  // sqrt(10000 x 0.48 x 0.52) = 50; the mean of T draws has sd 50 / sqrt(200) = 3.5: 5 sigma = 17.7.
  const std::vector<double> p = cost::zipf_probabilities(4, 1.0);
  cost::Rng rng(5);
  const int T = 200;
  double sums[4] = {0, 0, 0, 0};
  for (int t = 0; t < T; ++t) {
    const std::vector<std::int64_t> c = cost::sample_multinomial(10000, p, rng);
    REQUIRE(c.size() == 4);
    CHECK(c[0] + c[1] + c[2] + c[3] == 10000);  // every slot goes to one expert
    for (std::size_t e = 0; e < 4; ++e) sums[e] += static_cast<double>(c[e]);
  }
  const double expected[] = {4800, 2400, 1600, 1200};  // 10000 x p
  for (std::size_t e = 0; e < 4; ++e) CHECK(std::abs(sums[e] / T - expected[e]) < 17.7);
}

TEST_CASE("cost::group_loads: capacity drops and pads, dropless sends the real counts", "[cost][routing]") {
  // Two ranks, two experts (expert 0 on rank 0, expert 1 on rank 1), 4 slots
  // per rank routed 3 : 1 (p = 0.75, 0.25 expected exactly).
  const std::vector<std::vector<std::int64_t>> counts = {{3, 1}, {3, 1}};
  SECTION("capacity factor 1.0: C = 1.0 x 4 / 2 = 2 slots per (rank, expert)") {
    const std::vector<cost::RankLoad> loads = cost::group_loads(counts, 2.0);
    REQUIRE(loads.size() == 2);
    for (const cost::RankLoad& l : loads) {
      CHECK(l.routed_slots == 4.0);
      CHECK(l.dropped_slots == 1.0);  // 3 for the hot expert, 2 fit: 1 dropped
      CHECK(l.send_slots == 4.0);     // padded: 2 experts x C = 2
      CHECK(l.recv_slots == 4.0);     // 2 sources x C
      CHECK(l.expert_slots == 4.0);
    }
    // 2 dropped of 8 routed: 25%, all from the hot expert.
  }
  SECTION("dropless: all-to-all-v of the real counts") {
    const std::vector<cost::RankLoad> loads = cost::group_loads(counts, std::nullopt);
    CHECK(loads[0].send_slots == 4.0);
    CHECK(loads[0].recv_slots == 6.0);  // 3 + 3 for expert 0
    CHECK(loads[1].recv_slots == 2.0);  // 1 + 1 for expert 1
    CHECK(loads[0].expert_slots == 6.0);
    CHECK(loads[0].a2a_slots() == 6.0);  // max(send 4, receive 6)
    CHECK(loads[1].a2a_slots() == 4.0);  // max(send 4, receive 2)
    CHECK(loads[0].dropped_slots == 0.0);
    CHECK(cost::most_loaded_rank(loads) == 0);
  }
}

TEST_CASE("cost::route: a 3:1 histogram at capacity factor 1.0 drops a quarter of the slots", "[cost][routing]") {
  // Two experts, top-1, ep 2: 1024 slots per rank, C = 1.0 x 1024 / 2 = 512.
  // The hot expert gets binomial(1024, 0.75): mean 768, sd sqrt(1024 x 0.75 x
  // 0.25) = 13.9, so it always exceeds 512 (18 sd) and drops c - 512; the cold
  // one never exceeds (256 expected). Dropped = (768 - 512) / 1024 = 25% on
  // average; over 16 ranks x 12 layers = 192 draws its sd is
  // 13.9 / 1024 / sqrt(192) = 0.00098: 5 sigma = 0.005.
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "moeplan-routing-test-3to1.csv";
  {
    std::ofstream out(file);
    out << "expert,tokens\n0,3\n1,1\n";
  }
  const model::ScenarioSpec s =
      tiny({{"model.moe.num_experts", "2"}, {"model.moe.top_k", "1"}, {"parallelism.ep", "2"},
            {"workload.routing", "histogram"}, {"workload.routing_histogram_ref", file.string()}});
  std::filesystem::remove(file);
  const cost::RoutedLoads r = cost::route(s, 16);
  CHECK(r.padded);
  CHECK(std::abs(r.dropped_fraction - 0.25) < 0.005);
  REQUIRE(r.layers.size() == 12);
  for (const cost::RankLoad& l : r.layers[0]) CHECK(l.send_slots == 1024.0);  // padded: 2 x C = 1024
}

TEST_CASE("cost::route is deterministic in its seed", "[cost][routing]") {
  const std::vector<io::Override> zipf = {{"workload.routing", "zipf"},
                                          {"workload.routing_zipf_s", "1.2"},
                                          {"model.moe.dropless", "true"}};
  auto loads_of = [](const model::ScenarioSpec& s) {
    std::vector<double> out;
    for (const auto& layer : cost::route(s, 16).layers)
      for (const cost::RankLoad& l : layer) out.insert(out.end(), {l.send_slots, l.recv_slots, l.expert_slots});
    return out;
  };
  const std::vector<double> a = loads_of(tiny(zipf));
  CHECK(a == loads_of(tiny(zipf)));  // same seed (default 1): identical
  std::vector<io::Override> seeded = zipf;
  seeded.push_back({"workload.routing_seed", "2"});
  CHECK(a != loads_of(tiny(seeded)));  // another seed: another draw
  // Every slot sent is received: 16 ranks x 1024 tokens x top-2 = 32768 per layer.
  const cost::RoutedLoads r = cost::route(tiny(zipf), 16);
  for (const auto& layer : r.layers) {
    double sent = 0, received = 0;
    for (const cost::RankLoad& l : layer) {
      sent += l.send_slots;
      received += l.recv_slots;
    }
    CHECK(sent == 32768.0);
    CHECK(received == 32768.0);
  }
  CHECK(r.dropped_fraction == 0.0);  // dropless
}

TEST_CASE("cost::routed_moe_layer_sizes: balanced and padded routing give today's sizes", "[cost][routing]") {
  // 1024 tokens x top-2 x capacity 1.0 x d 256 x 4 bytes = 2097152 bytes; expert
  // FLOPs 2048 slots x 2 GEMMs x 2 x 256 x 512 = 1073741824.
  for (const char* routing : {"balanced", "zipf"}) {
    std::vector<io::Override> o = {{"workload.routing", routing}};
    if (std::string(routing) == "zipf") o.push_back({"workload.routing_zipf_s", "1.2"});
    const cost::MoeLayerSizes m = cost::routed_moe_layer_sizes(tiny(o));
    CHECK(m.dispatch_bytes == 2097152.0);
    CHECK(m.combine_bytes == 2097152.0);
    CHECK(m.expert_forward_flops == 1073741824.0);
    CHECK(m.expert_backward_flops == 2147483648.0);
  }
  // Balanced loads through moe_layer_sizes_for: the same numbers.
  const model::ScenarioSpec s = tiny({});
  const cost::RoutedLoads r = cost::route(s, 16);
  const cost::MoeLayerSizes m = cost::moe_layer_sizes_for(s.model, s.parallel, s.workload, r.layers[0][0]);
  CHECK(m.dispatch_bytes == 2097152.0);
  CHECK(m.expert_forward_flops == 1073741824.0);
  CHECK(r.dropped_fraction == 0.0);
}

TEST_CASE("cost::routed_moe_layer_sizes: dropless zipf prices a rank above the balanced load", "[cost][routing]") {
  // Dropless balanced: 2048 slots per rank (capacity factor 1). Zipf s = 1.2
  // over 16 experts gives the hottest expert 1 / H(16, 1.2) = 0.365 of the
  // slots (H = sum_{k=1..16} k^-1.2 = 2.7376), 5.8x the 1/16 share: the rank
  // holding it (one expert per rank) receives 16 x 2048 x 0.365 = 11970 slots,
  // sd sqrt(16 x 2048 x 0.365 x 0.635) = 87; the most loaded of 12 layers lies
  // a few sd above: within (11500, 12700).
  const model::ScenarioSpec s =
      tiny({{"workload.routing", "zipf"}, {"workload.routing_zipf_s", "1.2"}, {"model.moe.dropless", "true"}});
  const cost::MoeLayerSizes m = cost::routed_moe_layer_sizes(s);
  CHECK(m.dispatch_bytes > 11500.0 * 256 * 4);
  CHECK(m.dispatch_bytes < 12700.0 * 256 * 4);
  CHECK(m.expert_forward_flops == m.dispatch_bytes / (256.0 * 4) * 2 * 2 * 256 * 512);  // received = computed
}
