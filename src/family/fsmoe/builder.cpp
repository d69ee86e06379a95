#include <moeplan/family/fsmoe/builder.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/expert_pricing.hpp>
#include <moeplan/cost/routing.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/family/fsmoe/rules.hpp>
#include <moeplan/model/model_stats.hpp>
#include <moeplan/sched/work_shapes.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::fsmoe {
namespace {

using dag::Phase;
using dag::TaskId;
using model::OpClass;

enum class Kind { None, Tutel, TutelImproved, Lina, FsMoeNoIio, FsMoe };

Kind kind_of(const std::string& name) {
  if (name == "none") return Kind::None;
  if (name == "tutel") return Kind::Tutel;
  if (name == "tutel-improved") return Kind::TutelImproved;
  if (name == "pipemoe-lina") return Kind::Lina;
  if (name == "fsmoe-no-iio") return Kind::FsMoeNoIio;
  if (name == "fsmoe") return Kind::FsMoe;
  throw Error(ErrorKind::Input,
              fmt::format("schedule '{}' is not an FSMoE schedule (none, tutel, tutel-improved, "
                          "pipemoe-lina, fsmoe-no-iio, fsmoe)",
                          name),
              "schedule.name");
}


// A2A and the ESP collectives outrank gradient chunks in Lina's pool.
constexpr std::int32_t kMoePriority = 1;
constexpr std::int32_t kGradientPriority = 0;

// Gradient all-reduces to run while a dense backward part computes.
struct DenseOverlap {
  double dp_bytes = 0;  // dense gradients over DP
  const char* dp_where = "dense";
  double edp_bytes = 0;  // expert gradients over EDP
};

class Builder {
 public:
  Builder(const model::ScenarioSpec& s, const cost::CostModel& costs, const FsMoeKnobs& k)
      : s_(s), costs_(costs), k_(k), kind_(kind_of(k.schedule)), layout_(sched::rank_layout(s, k.multi_rank, "FSMoE")) {
    const model::ParallelSpec& p = s.parallel;
    tp_group_ = cost::strided_group_shape(p.tp, 1, s.cluster);
    etp_group_ = cost::strided_group_shape(p.etp, 1, s.cluster);
    ep_group_ = cost::strided_group_shape(p.ep, p.etp, s.cluster);
    dp_group_ = cost::strided_group_shape(p.dp, p.tp * p.cp, s.cluster);
    edp_group_ = cost::strided_group_shape(p.edp, p.etp * p.ep, s.cluster);
    // Tutel, Lina and no-IIO keep one communication stream; FSMoE splits intra and inter.
    split_ = kind_ == Kind::FsMoe;
    const dag::DispatchPolicy comm_policy = kind_ == Kind::Lina ? dag::DispatchPolicy::Priority : dag::DispatchPolicy::InOrder;
    for (std::int32_t r = 0; r < layout_.ranks; ++r) {
      compute_.push_back(b_.add_resource({"compute", r, dag::DispatchPolicy::InOrder}));
      inter_.push_back(b_.add_resource({split_ ? "inter" : "comm", r, comm_policy}));
      intra_.push_back(split_ ? b_.add_resource({"intra", r, dag::DispatchPolicy::InOrder}) : inter_.back());
    }
    moe_ = cost::routed_moe_layer_sizes(s);  // uneven expert load: the most loaded rank (docs/cost-model.md)
    std::int64_t next = 0;
    for (bool moe : s.model.moe_layer) moe_index_.push_back(moe ? next++ : -1);
    if (layout_.ranks > 1 && s.workload.routing != model::Routing::Balanced) {
      const cost::RoutedLoads loads = cost::route(s, layout_.ep);
      if (!loads.padded)  // padded buffers keep the balanced sizes on every rank
        for (const std::vector<cost::RankLoad>& layer : loads.layers) {
          rank_sizes_.emplace_back();
          for (const cost::RankLoad& load : layer)
            rank_sizes_.back().push_back(cost::moe_layer_sizes_for(s.model, p, s.workload, load));
        }
    }
    attention_ = cost::attention_layer_sizes(s.model, p, s.workload);
    local_seq_ = std::max<std::int64_t>(1, s.workload.seq_len / p.cp);  // queries = context: whole local sequences
  }

  sched::BuiltSchedule build() {
    const std::int64_t r_f = kind_ == Kind::None ? 1 : k_.degree_forward;
    const std::int64_t r_b = kind_ == Kind::None ? 1 : k_.degree_backward;
    const std::int32_t layers = static_cast<std::int32_t>(s_.model.num_layers);
    std::optional<sched::RankTasks> last;
    if (k_.single_layer_only) {
      const double t_gar_bytes = k_.grad_during_moe_bytes.empty() ? 0.0 : k_.grad_during_moe_bytes.front();
      last = moe_layer(0, std::nullopt, k_.backward_only ? r_b : r_f, k_.backward_only,
                       k_.backward_only ? t_gar_bytes : 0.0);
    } else {
      const std::int64_t batches = s_.workload.micro_batches_per_rank(s_.parallel.dp);
      // Graph bound (issue 14 item 4): checked on the rate after each layer
      // pass (of every rank in multi-rank mode).
      b_.set_limit(sched::graph_limit(s_.limits));
      const std::size_t passes = 2 * static_cast<std::size_t>(batches) * static_cast<std::size_t>(layers);
      std::size_t done = 0;
      for (std::int64_t n = 0; n < batches; ++n) {
        const bool last_batch = n + 1 == batches;  // gradients are reduced after the last micro-batch
        for (std::int32_t layer = 0; layer < layers; ++layer) {
          last = forward_layer(layer, last, r_f);
          b_.progress(++done, passes);
        }
        for (std::int32_t layer = layers - 1; layer >= 0; --layer) {
          const std::size_t i = static_cast<std::size_t>(layer);
          const std::int64_t r =
              kind_ != Kind::None && i < k_.degree_backward_per_layer.size() ? k_.degree_backward_per_layer[i] : r_b;
          last = backward_layer(layer, *last, r, last_batch);
          b_.progress(++done, passes);
        }
      }
      tail_allreduce(*last);
    }
    sched::BuiltSchedule out{
        std::move(b_).build(), k_.schedule, kind_ == Kind::None ? 1 : r_f, {}, {}, costs_.overlap_compute_slowdown()};
    out.overlap_comm_slowdown = costs_.overlap_comm_slowdown();
    if (k_.multi_rank) out.rank_compute_slowdown = sched::straggler_slowdown(s_);
    return out;
  }

 private:
  static std::vector<sched::RankTasks> after(const std::optional<sched::RankTasks>& t) {
    return t ? std::vector<sched::RankTasks>{*t} : std::vector<sched::RankTasks>{};
  }
  // A task's work shape when the build records them (FsMoeKnobs::record_work), else none.
  template <class Shape>
  std::optional<dag::WorkShape> work(const Shape& shape) const {
    return k_.record_work ? std::optional<dag::WorkShape>(shape()) : std::nullopt;
  }
  // A compute task of `flops` on every rank's compute stream, priced on the op's line; `work` its shape, when recorded.
  sched::RankTasks compute(const std::string& name, OpClass op, double flops, Phase ph, std::int32_t layer,
                           std::int32_t index, const std::vector<sched::RankTasks>& after,
                           const std::optional<dag::WorkShape>& work = {}) {
    return sched::emit_on_ranks(b_, {name, ph, layer, index, 0, 1, flops, work ? &*work : nullptr},
                                dag::TaskKind::Compute, op, costs_.compute(op, flops).value, compute_, after);
  }
  // A collective of `bytes` priced over `group`, one per rank group of `groups`, on streams `on`.
  sched::RankTasks collective(const std::string& name, OpClass op, const cost::GroupShape& group,
                       const parallel::RankGroups& groups, double bytes, const std::vector<dag::ResourceId>& on,
                       Phase ph, std::int32_t layer, std::int32_t index, const std::vector<sched::RankTasks>& after,
                       std::int32_t priority) {
    return sched::emit_collective(b_, {name, ph, layer, index, priority, group.size, bytes}, op,
                           costs_.communication(op, group, bytes).value, groups, on, after);
  }

  // A collective whose members move different bytes (all-to-all-v): each group waits for its slowest member.
  sched::RankTasks collective(const std::string& name, OpClass op, const cost::GroupShape& group,
                       const parallel::RankGroups& groups, const std::function<double(std::int64_t)>& bytes_of,
                       const std::vector<dag::ResourceId>& on, Phase ph, std::int32_t layer, std::int32_t index,
                       const std::vector<sched::RankTasks>& after, std::int32_t priority) {
    return sched::emit_collective(
        b_, {name, ph, layer, index, priority, group.size, 0}, op,
        [&](std::int64_t r) {
          const double bytes = bytes_of(r);
          return sched::RankCost{costs_.communication(op, group, bytes).value, bytes};
        },
        groups, on, after);
  }
  // The MoE sizes of `rank` in block `layer` (one whole micro-batch).
  const cost::MoeLayerSizes& moe_sizes(std::int32_t layer, std::int64_t rank) const {
    if (rank_sizes_.empty()) return moe_;
    return rank_sizes_[static_cast<std::size_t>(moe_index_[static_cast<std::size_t>(layer)])]
                      [static_cast<std::size_t>(rank)];
  }

  // Dense part of a generalized layer: attention with MP (SP collectives on intra) and the gate.
  sched::RankTasks dense_part(std::int32_t layer, const std::optional<sched::RankTasks>& entry, bool backward,
                       const DenseOverlap& overlap = {}) {
    const Phase ph = backward ? Phase::Backward : Phase::Forward;
    const char* dir = backward ? "bwd" : "fwd";
    const model::ParallelSpec& p = s_.parallel;
    std::vector<sched::RankTasks> deps = after(entry);
    const double factor = backward ? 2.0 : 1.0;
    const double gate_flops = factor * moe_.gating_forward_flops;
    const auto gate_work = [&] {
      return work([&] { return sched::router_work(s_.model, moe_.tokens_per_rank, backward); });
    };
    if (backward)
      deps = {compute(fmt::format("bwd L{} gate", layer), OpClass::Gemm, gate_flops, ph, layer, 0, deps, gate_work())};
    if (p.tp > 1 && p.sequence_parallel)
      deps = {collective(fmt::format("{} L{} attn-ag", dir, layer), OpClass::AllGather, tp_group_, layout_.tp,
                         attention_.tp_allgather_bytes, intra_, ph, layer, 0, deps, kMoePriority)};
    // The gradients are ready at the entry; issued here, after the AllGather,
    // a shared stream runs them while the attention computes.
    const std::vector<sched::RankTasks> ready = after(entry);
    if (overlap.dp_bytes > 0) gradient(layer, overlap.dp_bytes, overlap.dp_where, ready);
    if (overlap.edp_bytes > 0) expert_gradient(layer, overlap.edp_bytes, "layer", ready);
    const double att_flops = backward ? attention_.backward_flops : attention_.forward_flops;
    const std::optional<dag::WorkShape> att_work =
        work([&] { return sched::attention_work(s_.model, local_seq_, local_seq_, att_flops); });
    sched::RankTasks out = sched::emit_on_ranks(
        b_,
        {fmt::format("{} L{} attention", dir, layer), ph, layer, 0, 0, 1, att_flops, att_work ? &*att_work : nullptr},
        dag::TaskKind::Compute, OpClass::Attention, costs_.attention(s_.model, local_seq_, local_seq_, att_flops).value,
        compute_, deps);
    if (p.tp > 1) {
      const OpClass op = p.sequence_parallel ? OpClass::ReduceScatter : OpClass::AllReduce;
      const double bytes = p.sequence_parallel ? attention_.tp_reducescatter_bytes : attention_.tp_allreduce_bytes;
      out = collective(fmt::format("{} L{} attn-{}", dir, layer, p.sequence_parallel ? "rs" : "ar"), op, tp_group_,
                       layout_.tp, bytes, intra_, ph, layer, 0, {out}, kMoePriority);
    }
    if (!backward)
      out = compute(fmt::format("fwd L{} gate", layer), OpClass::Gemm, gate_flops, ph, layer, 0, {out}, gate_work());
    return out;
  }

  // The MoE part in r chunks (Fig. 3). Forward: D_j -> AG_j -> E_j -> RS_j -> C_j.
  // Backward: the adjoints in the same order (combine-gradient first), 2x experts,
  // with `t_gar_bytes` of Gradient-AllReduce on the inter link between the
  // combines and the dispatches, while the experts and the intra link work.
  sched::RankTasks moe_layer(std::int32_t layer, const std::optional<sched::RankTasks>& entry, std::int64_t r, bool backward,
                      double t_gar_bytes = 0) {
    const Phase ph = backward ? Phase::Backward : Phase::Forward;
    const char* dir = backward ? "bwd" : "fwd";
    const model::ParallelSpec& p = s_.parallel;
    const double rr = as_double(r);
    // Each rank's share of one chunk: its own sizes under uneven dropless routing, else every rank alike.
    auto a2a_bytes = [&](std::int64_t q) { return moe_sizes(layer, q).dispatch_bytes / rr; };
    auto esp_bytes = [&](std::int64_t q) { return moe_sizes(layer, q).etp_allgather_bytes / rr; };
    auto expert_cost = [&](std::int64_t q) {
      const cost::MoeLayerSizes& sizes = moe_sizes(layer, q);
      const double flops = (backward ? sizes.expert_backward_flops : sizes.expert_forward_flops) / rr;
      // By shape when the profile has a GEMM shape model; else the gemm line on `flops`, as before.
      return sched::RankCost{cost::expert_ffn_time(costs_, s_.model, s_.parallel, sizes, backward, rr).value, flops,
                             work([&] { return sched::expert_work(s_.model, s_.parallel, sizes, backward, rr); })};
    };
    const std::vector<sched::RankTasks> first = after(entry);
    std::vector<sched::RankTasks> experts(static_cast<std::size_t>(r)), scattered(static_cast<std::size_t>(r));
    const char* in_name = backward ? "combine" : "dispatch";
    const char* out_name = backward ? "dispatch" : "combine";
    const bool one_stream = !split_;
    // With ep = 1 every rank holds all experts: tokens stay on their rank and
    // no AlltoAll runs; chunk j's experts wait for what the A2A would have.
    const bool a2a = p.ep > 1;
    // What chunk j's ESP AllGather (or experts) and its experts wait for.
    std::vector<std::vector<sched::RankTasks>> inputs(static_cast<std::size_t>(r)), gathered(static_cast<std::size_t>(r));
    auto a2a_in = [&](std::int64_t j) {
      inputs[static_cast<std::size_t>(j)] =
          a2a ? std::vector<sched::RankTasks>{collective(fmt::format("{} L{} {} c{}", dir, layer, in_name, j), OpClass::A2A,
                                                  ep_group_, layout_.ep, a2a_bytes, inter_, ph, layer,
                                                  static_cast<std::int32_t>(j), first, kMoePriority)}
              : first;
    };
    auto gather = [&](std::int64_t j) {
      const std::size_t i = static_cast<std::size_t>(j);
      gathered[i] = p.etp > 1 ? std::vector<sched::RankTasks>{collective(fmt::format("{} L{} esp-ag c{}", dir, layer, j),
                                                                  OpClass::AllGather, etp_group_, layout_.etp,
                                                                  esp_bytes, intra_, ph, layer,
                                                                  static_cast<std::int32_t>(j), inputs[i], kMoePriority)}
                              : inputs[i];
    };
    auto expert = [&](std::int64_t j) {
      const std::size_t i = static_cast<std::size_t>(j);
      experts[i] = sched::emit_on_ranks(
          b_, {fmt::format("{} L{} experts c{}", dir, layer, j), ph, layer, static_cast<std::int32_t>(j), 0, 1, 0},
          dag::TaskKind::Compute, OpClass::Gemm, expert_cost, compute_, gathered[i]);
    };
    auto scatter = [&](std::int64_t j) {
      const std::size_t i = static_cast<std::size_t>(j);
      scattered[i] = p.etp > 1 ? collective(fmt::format("{} L{} esp-rs c{}", dir, layer, j), OpClass::ReduceScatter,
                                            etp_group_, layout_.etp, esp_bytes, intra_, ph, layer,
                                            static_cast<std::int32_t>(j), {experts[i]}, kMoePriority)
                               : experts[i];
    };
    std::optional<sched::RankTasks> last;
    // Chunks end in issue order on their streams, so the last chunk's output ends the layer.
    auto a2a_out = [&](std::int64_t j) {
      const sched::RankTasks& out = scattered[static_cast<std::size_t>(j)];
      last = a2a ? collective(fmt::format("{} L{} {} c{}", dir, layer, out_name, j), OpClass::A2A, ep_group_,
                              layout_.ep, a2a_bytes, inter_, ph, layer, static_cast<std::int32_t>(j), {out},
                              kMoePriority)
                 : out;
    };
    if (one_stream) {
      // One stream for everything (no intra/inter overlap): per step j,
      // A2A-in and AllGather of chunk j, then ReduceScatter and A2A-out of chunk j-1.
      for (std::int64_t j = 0; j <= r; ++j) {
        if (j < r) {
          a2a_in(j);
          gather(j);
          expert(j);
        }
        if (j >= 1) {
          scatter(j - 1);
          a2a_out(j - 1);
        }
      }
    } else {
      // Inter: all A2A-in, [gradient], all A2A-out. Intra: AG_j ahead of RS_{j-1}.
      for (std::int64_t j = 0; j < r; ++j) a2a_in(j);
      for (std::int64_t j = 0; j <= r; ++j) {
        if (j < r) {
          gather(j);
          expert(j);
        }
        if (j >= 1) scatter(j - 1);
      }
      if (t_gar_bytes > 0) gradient(layer, t_gar_bytes, "moe", inputs.back());
      for (std::int64_t j = 0; j < r; ++j) a2a_out(j);
    }
    if (one_stream && t_gar_bytes > 0) gradient(layer, t_gar_bytes, "moe", {*last});
    return *last;
  }

  // The streams of a group's link: inter when it spans nodes (the same stream
  // as intra for schedules with one communication stream).
  const std::vector<dag::ResourceId>& stream_of(const cost::GroupShape& group) const {
    return group.link() == model::LinkClass::Inter ? inter_ : intra_;
  }

  // A Gradient-AllReduce of `bytes` of dense gradients over DP.
  sched::RankTasks gradient(std::int32_t layer, double bytes, const char* where, const std::vector<sched::RankTasks>& after,
                     std::int32_t index = 0) {
    return collective(fmt::format("grad-ar L{} {} {}", layer, where, index), OpClass::AllReduce, dp_group_,
                      layout_.dp, bytes, stream_of(dp_group_), Phase::Backward, layer, index, after,
                      kGradientPriority);
  }
  // An AllReduce of `bytes` of expert gradients over EDP.
  sched::RankTasks expert_gradient(std::int32_t layer, double bytes, const char* where, const std::vector<sched::RankTasks>& after,
                            std::int32_t index = 0) {
    return collective(fmt::format("grad-edp-ar L{} {} {}", layer, where, index), OpClass::AllReduce, edp_group_,
                      layout_.edp, bytes, stream_of(edp_group_), Phase::Backward, layer, index, after,
                      kGradientPriority);
  }
  // Lina's 30 MB chunks of one all-reduce, into the priority pool.
  void lina_chunks(std::int32_t layer, double bytes, bool expert, const sched::RankTasks& after) {
    const std::int64_t chunks =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(bytes / kLinaChunkBytes)));
    for (std::int64_t c = 0; c < chunks; ++c) {
      const double chunk = std::min(kLinaChunkBytes, bytes - as_double(c) * kLinaChunkBytes);
      const std::int32_t index = static_cast<std::int32_t>(c);
      if (expert)
        expert_gradient(layer, chunk, "chunk", {after}, index);
      else
        gradient(layer, chunk, "chunk", {after}, index);
    }
  }

  sched::RankTasks forward_layer(std::int32_t layer, const std::optional<sched::RankTasks>& entry, std::int64_t r) {
    return moe_layer(layer, dense_part(layer, entry, false), r, false);
  }

  sched::RankTasks backward_layer(std::int32_t layer, const sched::RankTasks& entry, std::int64_t r, bool reduce) {
    const std::size_t i = static_cast<std::size_t>(layer);
    const double dense = reduce ? generalized_layer_gradient_bytes(s_, layer) : 0.0;
    const double expert = reduce ? generalized_layer_expert_gradient_bytes(s_, layer) : 0.0;
    double during_moe = 0;
    DenseOverlap overlap;
    if (reduce && (kind_ == Kind::FsMoe || kind_ == Kind::FsMoeNoIio)) {
      if (i < k_.grad_during_moe_bytes.size()) during_moe = k_.grad_during_moe_bytes[i];
      if (i < k_.grad_during_dense_bytes.size()) overlap.dp_bytes = k_.grad_during_dense_bytes[i];
    }
    const sched::RankTasks moe_done = moe_layer(layer, entry, r, true, during_moe);
    switch (kind_) {
      case Kind::TutelImproved:
        // Fig. 3b: the later layer's gradients hide behind this layer's dense part.
        overlap = {carried_dense_, "layer", expert};
        carried_dense_ = 0;
        break;
      case Kind::FsMoe:
      case Kind::FsMoeNoIio:
        overlap.edp_bytes = expert;
        break;
      case Kind::Lina:
        if (expert > 0) lina_chunks(layer, expert, true, moe_done);
        break;
      default:
        break;
    }
    const sched::RankTasks dense_done = dense_part(layer, moe_done, true, overlap);
    if (!reduce) return dense_done;
    switch (kind_) {
      case Kind::TutelImproved:
        carried_dense_ = dense;  // for the next generalized layer's dense part, or the tail
        break;
      case Kind::Lina:
        lina_chunks(layer, dense, false, dense_done);
        break;
      case Kind::FsMoe:
      case Kind::FsMoeNoIio:
        // What the partition left for the end; its overlapped bytes come from later layers.
        pending_dense_ += dense - during_moe - overlap.dp_bytes;
        break;
      default:
        pending_dense_ += dense;
        pending_expert_ += expert;
        break;
    }
    return dense_done;
  }

  void tail_allreduce(const sched::RankTasks& end) {
    const double dense = pending_dense_ + carried_dense_;
    if (dense > 1e-6) gradient(-1, dense, "tail", {end});
    if (pending_expert_ > 1e-6) expert_gradient(-1, pending_expert_, "tail", {end});
  }

  const model::ScenarioSpec& s_;
  const cost::CostModel& costs_;
  const FsMoeKnobs& k_;
  Kind kind_;
  sched::RankLayout layout_;  // every rank in multi-rank mode, else rank 0 standing for all
  bool split_ = false;  // FSMoE's intra and inter streams apart
  dag::TaskGraphBuilder b_;
  std::vector<dag::ResourceId> compute_, inter_, intra_;
  cost::GroupShape tp_group_, etp_group_, ep_group_, dp_group_, edp_group_;
  cost::MoeLayerSizes moe_;
  // Multi-rank with dropless uneven routing: each rank's own sizes, [MoE layer][rank]
  // (cost::route over the layout's EP groups); empty: every rank is priced at moe_.
  std::vector<std::vector<cost::MoeLayerSizes>> rank_sizes_;
  std::vector<std::int64_t> moe_index_;  // block -> MoE layer index
  cost::AttentionLayerSizes attention_;
  std::int64_t local_seq_ = 1;
  double pending_dense_ = 0;   // dense gradient bytes for the tail all-reduce
  double pending_expert_ = 0;  // expert gradient bytes for the tail all-reduce
  double carried_dense_ = 0;   // tutel-improved: the last layer's dense gradients, not yet issued
};

}  // namespace

const std::vector<std::string>& fsmoe_schedules() { return rules().schedules(); }

double generalized_layer_gradient_bytes(const model::ScenarioSpec& s, std::int32_t) {
  return cost::dense_gradient_bytes_per_block(s.model, s.parallel);
}

double generalized_layer_expert_gradient_bytes(const model::ScenarioSpec& s, std::int32_t) {
  return s.parallel.edp > 1 ? cost::expert_gradient_bytes_per_block(s.model, s.parallel) : 0.0;
}

sched::BuiltSchedule build_fsmoe(const model::ScenarioSpec& s, const cost::CostModel& costs, const FsMoeKnobs& knobs) {
  for (std::int64_t r : {knobs.degree_forward, knobs.degree_backward})
    if (r < 1 || r > 64) throw Error(ErrorKind::Input, fmt::format("degree {} is outside 1..64", r), "schedule.degree");
  return Builder(s, costs, knobs).build();
}

}  // namespace moeplan::fsmoe
