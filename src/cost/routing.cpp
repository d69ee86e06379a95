#include <moeplan/cost/routing.hpp>

#include <algorithm>
#include <cmath>

#include <moeplan/core/error.hpp>
#include <moeplan/core/portable_math.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::cost {
namespace {


std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Stream purposes for stream_seed.
constexpr std::uint64_t kPermutation = 1;
constexpr std::uint64_t kRouting = 2;


// x^n for a non-negative integer n by repeated squaring: multiplications only.
double integer_power(double x, std::int64_t n) {
  double result = 1.0;
  while (n > 0) {
    if (n & 1) result *= x;
    x *= x;
    n >>= 1;
  }
  return result;
}

// Standard normal, approximately: the Irwin-Hall sum of 12 uniforms minus 6
// (mean 0, variance 12 x 1/12 = 1; tails end at +-6). Additions only.
double irwin_hall_normal(Rng& rng) {
  double sum = 0;
  for (int i = 0; i < 12; ++i) sum += rng.uniform();
  return sum - 6.0;
}

// The expected (undrawn) load of balanced routing: every source sends n / E to each expert.
bool padded(const model::ModelSpec& m) { return m.moe.capacity_factor.has_value(); }

}  // namespace

Rng::Rng(std::uint64_t seed) {
  std::uint64_t state = seed;
  for (std::uint64_t& word : s_) word = splitmix64(state);
}

std::uint64_t Rng::next() {
  // xoshiro256** 1.0, as published at prng.di.unimi.it/xoshiro256starstar.c.
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::uint64_t Rng::below(std::uint64_t n) {
  // Reject the top partial block of 2^64 mod n values.
  const std::uint64_t limit = (~std::uint64_t{0}) - ((~std::uint64_t{0}) % n + 1) % n;
  for (;;) {
    const std::uint64_t x = next();
    if (x <= limit) return x % n;
  }
}

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t purpose, std::uint64_t layer, std::uint64_t rank) {
  std::uint64_t state = seed;
  std::uint64_t h = splitmix64(state);
  for (std::uint64_t part : {purpose, layer, rank}) {
    state = h ^ part;
    h = splitmix64(state);
  }
  return h;
}

std::vector<double> zipf_probabilities(std::int64_t experts, double s) {
  MOEPLAN_CHECK(experts > 0 && s > 0, "Zipf probabilities need experts and s > 0");
  std::vector<double> p(static_cast<std::size_t>(experts));
  double total = 0;
  for (std::int64_t k = 1; k <= experts; ++k) {
    const double weight = portable_exp(-s * portable_log(as_double(k)));  // k^-s
    p[static_cast<std::size_t>(k - 1)] = weight;
    total += weight;
  }
  for (double& v : p) v /= total;
  return p;
}

std::vector<double> expert_probabilities(const model::ModelSpec& m, const model::WorkloadSpec& w,
                                         std::int64_t moe_layer) {
  const std::int64_t experts = m.moe.num_experts;
  const std::size_t E = static_cast<std::size_t>(experts);
  switch (w.routing) {
    case model::Routing::Balanced:
      return std::vector<double>(E, 1.0 / as_double(experts));
    case model::Routing::Histogram: {
      MOEPLAN_CHECK(w.routing_histogram.size() == E, "a validated histogram has one count per expert");
      double total = 0;
      for (double c : w.routing_histogram) total += c;
      std::vector<double> p = w.routing_histogram;
      for (double& v : p) v /= total;
      return p;
    }
    case model::Routing::Zipf:
      break;
  }
  MOEPLAN_CHECK(w.routing_zipf_s.has_value(), "zipf routing has its exponent");
  const std::vector<double> by_rank = zipf_probabilities(experts, *w.routing_zipf_s);
  // Popularity ranks to expert ids: a Fisher-Yates shuffle drawn per layer.
  std::vector<std::size_t> id_of_rank(E);
  for (std::size_t i = 0; i < E; ++i) id_of_rank[i] = i;
  Rng rng(stream_seed(static_cast<std::uint64_t>(w.routing_seed), kPermutation,
                      static_cast<std::uint64_t>(moe_layer), 0));
  for (std::size_t i = E - 1; i > 0; --i) std::swap(id_of_rank[i], id_of_rank[rng.below(i + 1)]);
  std::vector<double> p(E);
  for (std::size_t k = 0; k < E; ++k) p[id_of_rank[k]] = by_rank[k];
  return p;
}

std::int64_t sample_binomial(std::int64_t n, double p, Rng& rng) {
  if (n <= 0 || p <= 0) return 0;
  if (p >= 1) return n;
  const bool flip = p > 0.5;
  const double q = flip ? 1.0 - p : p;
  const double nd = as_double(n);
  std::int64_t x = 0;
  if (nd * q < kBinomialInversionBelow) {
    // Inversion: walk the pmf f(k+1) = f(k) (n - k)/(k + 1) q/(1 - q) from
    // f(0) = (1 - q)^n (>= e^-45 here, no underflow) until it passes u.
    const double u = rng.uniform();
    const double ratio = q / (1.0 - q);
    double f = integer_power(1.0 - q, n);
    double cdf = f;
    while (u >= cdf && x < n) {
      f *= ratio * as_double(n - x) / as_double(x + 1);
      ++x;
      cdf += f;
      if (f == 0) break;  // past the mode and underflowed: u sat in the last rounding of the cdf
    }
  } else {
    const double mean = nd * q;
    const double sd = std::sqrt(nd * q * (1.0 - q));  // IEEE sqrt: correctly rounded everywhere
    const double v = std::floor(mean + sd * irwin_hall_normal(rng) + 0.5);
    x = static_cast<std::int64_t>(std::clamp(v, 0.0, nd));
  }
  return flip ? n - x : x;
}

std::vector<std::int64_t> sample_multinomial(std::int64_t n, const std::vector<double>& p, Rng& rng) {
  std::vector<std::int64_t> out(p.size(), 0);
  if (p.empty()) return out;
  // Probability left from expert e on, summed from the end (no cancellation).
  std::vector<double> left(p.size() + 1, 0.0);
  for (std::size_t e = p.size(); e-- > 0;) left[e] = left[e + 1] + p[e];
  std::int64_t remaining = n;
  for (std::size_t e = 0; e + 1 < p.size() && remaining > 0; ++e) {
    if (left[e] <= 0) break;
    const double conditional = std::min(1.0, p[e] / left[e]);
    out[e] = sample_binomial(remaining, conditional, rng);
    remaining -= out[e];
  }
  // The last expert with any probability takes what is left.
  for (std::size_t e = p.size(); e-- > 0;)
    if (p[e] > 0 || e == 0) {
      out[e] += remaining;
      break;
    }
  return out;
}

std::vector<RankLoad> group_loads(const std::vector<std::vector<std::int64_t>>& counts, std::optional<double> capacity) {
  const std::size_t ep = counts.size();
  std::vector<RankLoad> loads(ep);
  if (ep == 0) return loads;
  const std::size_t E = counts.front().size();
  MOEPLAN_CHECK(E % ep == 0, "experts split evenly over the EP group");
  const std::size_t per_rank = E / ep;
  for (std::size_t i = 0; i < ep; ++i) {
    MOEPLAN_CHECK(counts[i].size() == E, "every source rank routes over every expert");
    RankLoad& src = loads[i];
    for (std::size_t e = 0; e < E; ++e) {
      const double c = as_double(counts[i][e]);
      src.routed_slots += c;
      RankLoad& dst = loads[e / per_rank];
      if (capacity) {
        // Beyond capacity dropped; the buffer padded to capacity either way.
        src.dropped_slots += std::max(0.0, c - *capacity);
        src.send_slots += *capacity;
        dst.recv_slots += *capacity;
        dst.expert_slots += *capacity;
      } else {
        src.send_slots += c;
        dst.recv_slots += c;
        dst.expert_slots += c;
      }
    }
  }
  return loads;
}

RoutedLoads route(const model::ScenarioSpec& s, std::int64_t ranks) {
  const std::int64_t ep = s.parallel.ep;
  MOEPLAN_CHECK(ranks > 0 && ranks % ep == 0, "routing draws whole EP groups");
  std::vector<std::vector<std::int64_t>> groups(static_cast<std::size_t>(ranks / ep));
  for (std::int64_t r = 0; r < ranks; ++r) groups[static_cast<std::size_t>(r / ep)].push_back(r);
  return route(s, groups);
}

RoutedLoads route(const model::ScenarioSpec& s, const std::vector<std::vector<std::int64_t>>& ep_groups) {
  const model::ModelSpec& m = s.model;
  const std::int64_t ep = s.parallel.ep;
  std::int64_t ranks = 0;
  for (const std::vector<std::int64_t>& group : ep_groups) {
    MOEPLAN_CHECK(static_cast<std::int64_t>(group.size()) == ep, "routing draws whole EP groups");
    for (std::int64_t r : group) ranks = std::max(ranks, r + 1);
  }
  RoutedLoads out;
  out.routing = s.workload.routing;
  out.padded = padded(m);
  const double tokens = tokens_per_rank(m, s.parallel, s.workload);
  const std::int64_t slots = static_cast<std::int64_t>(tokens) * m.moe.top_k;  // tokens is whole: validated splits
  const std::int64_t E = m.moe.num_experts;
  const std::optional<double> capacity =
      out.padded ? std::optional<double>(*m.moe.capacity_factor * as_double(slots) / as_double(E)) : std::nullopt;
  const std::int64_t layers = m.num_moe_layers();
  out.layers.resize(static_cast<std::size_t>(layers));
  double dropped = 0, routed = 0;
  for (std::int64_t l = 0; l < layers; ++l) {
    std::vector<RankLoad>& layer = out.layers[static_cast<std::size_t>(l)];
    if (s.workload.routing == model::Routing::Balanced) {
      // The expected load, drawn from nothing: today's sizes (workload_sizing.cpp).
      const double buffer = as_double(slots) * (out.padded ? *m.moe.capacity_factor : 1.0);
      layer.assign(static_cast<std::size_t>(ranks), RankLoad{as_double(slots), buffer, buffer, buffer, 0.0});
    } else {
      layer.assign(static_cast<std::size_t>(ranks), RankLoad{});
      const std::vector<double> p = expert_probabilities(m, s.workload, l);
      for (const std::vector<std::int64_t>& group : ep_groups) {
        std::vector<std::vector<std::int64_t>> counts;
        for (std::int64_t r : group) {
          Rng rng(stream_seed(static_cast<std::uint64_t>(s.workload.routing_seed), kRouting,
                              static_cast<std::uint64_t>(l), static_cast<std::uint64_t>(r)));
          counts.push_back(sample_multinomial(slots, p, rng));
        }
        const std::vector<RankLoad> loads = group_loads(counts, capacity);
        for (std::size_t i = 0; i < group.size(); ++i) layer[static_cast<std::size_t>(group[i])] = loads[i];
      }
    }
    for (const RankLoad& load : layer) {
      dropped += load.dropped_slots;
      routed += load.routed_slots;
    }
  }
  out.dropped_fraction = routed > 0 ? dropped / routed : 0.0;
  return out;
}

MoeLayerSizes moe_layer_sizes_for(const model::ModelSpec& m, const model::ParallelSpec& p,
                                  const model::WorkloadSpec& w, const RankLoad& load) {
  // Today's sizes, with the routed parts replaced (workload_sizing.cpp's formulas).
  MoeLayerSizes s = moe_layer_sizes(m, p, w);
  const double d = as_double(m.d_model);
  const double bytes = as_double(m.dtype_bytes);
  const double gemms = m.moe.expert_type == model::FfnType::GeluFfn ? 2.0 : 3.0;
  s.dispatch_bytes = load.a2a_slots() * d * bytes;
  s.combine_bytes = s.dispatch_bytes;
  if (p.etp > 1) {
    s.etp_allgather_bytes = load.recv_slots * d * bytes * as_double(p.etp);
    s.etp_reducescatter_bytes = s.etp_allgather_bytes;
  }
  s.expert_slots = load.expert_slots;
  s.expert_forward_flops = load.expert_slots * gemms * 2.0 * d * as_double(m.moe.expert_ffn_hidden);
  s.expert_forward_flops += s.tokens_per_rank * as_double(m.moe.num_shared_experts) * gemms * 2.0 * d *
                            as_double(m.moe.shared_expert_ffn_hidden);
  s.expert_backward_flops = 2.0 * s.expert_forward_flops;  // FSMoE section 4.4, as moe_layer_sizes
  return s;
}

std::size_t most_loaded_rank(const std::vector<RankLoad>& loads) {
  std::size_t best = 0;
  for (std::size_t r = 1; r < loads.size(); ++r) {
    const RankLoad& a = loads[r];
    const RankLoad& b = loads[best];
    if (a.a2a_slots() > b.a2a_slots() || (a.a2a_slots() == b.a2a_slots() && a.expert_slots > b.expert_slots))
      best = r;
  }
  return best;
}

MoeLayerSizes routed_moe_layer_sizes(const model::ScenarioSpec& s) {
  if (s.workload.routing == model::Routing::Balanced || padded(s.model))
    return moe_layer_sizes(s.model, s.parallel, s.workload);
  const RoutedLoads loads = route(s, s.parallel.ep);
  RankLoad worst;
  bool any = false;
  for (const std::vector<RankLoad>& layer : loads.layers) {
    const RankLoad& r = layer[most_loaded_rank(layer)];
    if (!any || r.a2a_slots() > worst.a2a_slots() ||
        (r.a2a_slots() == worst.a2a_slots() && r.expert_slots > worst.expert_slots))
      worst = r;
    any = true;
  }
  if (!any) return moe_layer_sizes(s.model, s.parallel, s.workload);
  return moe_layer_sizes_for(s.model, s.parallel, s.workload, worst);
}

}  // namespace moeplan::cost
