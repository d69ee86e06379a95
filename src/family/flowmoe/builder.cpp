#include <moeplan/family/flowmoe/builder.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/expert_pricing.hpp>
#include <moeplan/cost/routing.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/family/flowmoe/rules.hpp>
#include <moeplan/sched/work_shapes.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::flowmoe {
namespace {

using dag::Phase;
using dag::TaskId;
using model::OpClass;

enum class Kind { None, Tutel, FlowAt, FlowAr, Flow };

Kind kind_of(const std::string& name) {
  if (name == "none") return Kind::None;
  if (name == "tutel") return Kind::Tutel;
  if (name == "flowmoe-at") return Kind::FlowAt;
  if (name == "flowmoe-ar") return Kind::FlowAr;
  if (name == "flowmoe") return Kind::Flow;
  throw Error(ErrorKind::Input,
              fmt::format("schedule '{}' is not a FlowMoE schedule (none, tutel, flowmoe-at, "
                          "flowmoe-ar, flowmoe)",
                          name),
              "schedule.name");
}


class Builder {
 public:
  Builder(const model::ScenarioSpec& s, const cost::CostModel& costs, const FlowMoeKnobs& k)
      : s_(s), costs_(costs), k_(k), kind_(kind_of(k.schedule)) {
    const model::ParallelSpec& p = s.parallel;
    R_ = kind_ == Kind::None ? 1 : k.degree;
    split_attention_ = kind_ == Kind::FlowAt || kind_ == Kind::Flow;
    chunked_ar_ = kind_ == Kind::FlowAr || kind_ == Kind::Flow;
    ranks_ = k.multi_rank ? static_cast<std::int32_t>(s.cluster.world_size()) : 1;
    b_.set_limit(sched::graph_limit(s.limits));
    if (k.multi_rank && (p.tp != 1 || p.cp != 1 || p.pp != 1 || p.etp != 1))
      throw Error(ErrorKind::Input, "multi_rank FlowMoE needs tp = cp = pp = etp = 1 (expert and data parallel only)",
                  "schedule.mode");
    for (std::int32_t r = 0; r < ranks_; ++r) {
      compute_.push_back(b_.add_resource({"compute", r, dag::DispatchPolicy::InOrder}));
      comm_.push_back(b_.add_resource({"comm", r, dag::DispatchPolicy::Priority}));
    }
    ep_group_ = cost::strided_group_shape(p.ep, p.etp, s.cluster);
    dp_group_ = cost::strided_group_shape(p.dp, p.tp * p.cp, s.cluster);
    edp_group_ = cost::strided_group_shape(p.edp, p.etp * p.ep, s.cluster);
    const auto moe = cost::moe_layer_sizes(s.model, p, s.workload);
    const double rr = as_double(R_);
    a2a_bytes_ = moe.dispatch_bytes / rr;
    a2a_ms_ = costs.communication(OpClass::A2A, ep_group_, a2a_bytes_).value;
    for (int phase = 0; phase < 2; ++phase) {
      expert_flops_[phase] = (phase == 0 ? moe.expert_forward_flops : moe.expert_backward_flops) / rr;
      // By shape when the profile has a GEMM shape model; else the gemm line on the FLOPs, as before.
      expert_ms_[phase] = cost::expert_ffn_time(costs, s.model, p, moe, phase == 1, rr).value;
      // AT = MHA + gating (section 3.2), for 1/R of the batch, or all of it when not split.
      const double parts = split_attention_ ? rr : 1.0;
      const auto att = cost::attention_layer_sizes(s.model, p, s.workload);
      const double factor = phase == 0 ? 1.0 : 2.0;
      at_flops_[phase] = factor * (att.forward_flops + moe.gating_forward_flops) / parts;
      const std::int64_t local_seq = std::max<std::int64_t>(1, s.workload.seq_len / p.cp);
      at_ms_[phase] = costs.attention(s.model, local_seq, local_seq, factor * att.forward_flops / parts).value +
                      costs.compute(OpClass::Gemm, factor * moe.gating_forward_flops / parts).value;
      if (k.record_work) {  // the same split, for the executor (sched/work_shapes.hpp)
        at_work_[phase] =
            sched::with_gemms(sched::attention_work(s.model, local_seq, local_seq, factor * att.forward_flops / parts),
                              sched::router_work(s.model, moe.tokens_per_rank / parts, phase == 1));
        expert_work_[phase] = sched::expert_work(s.model, p, moe, phase == 1, rr);
      }
    }
    // Uneven expert load (docs/cost-model.md): dropless routing that is not
    // balanced sizes each rank's AlltoAll and experts by its own counts, per
    // layer; capacity buffers keep the balanced sizes above.
    if (s.workload.routing != model::Routing::Balanced && !s.model.moe.capacity_factor) route();
    // FlowMoE's AR is the MHA + gate gradients, replicated on every worker
    // (section 1; section 3.3 pipelines it), over DP. Its experts have one
    // copy each; where they have replicas (edp > 1) their gradients are
    // all-reduced over EDP, as tensors of their own in the same pool.
    ar_bytes_ = cost::dense_gradient_bytes_per_block(s.model, p);
    expert_ar_bytes_ = p.edp > 1 ? cost::expert_gradient_bytes_per_block(s.model, p) : 0.0;
  }

  sched::BuiltSchedule build() {
    const std::int32_t L = static_cast<std::int32_t>(s_.model.num_layers);
    // Per micro-batch r, the tasks the next block's r waits for (one per rank, or the collective).
    std::vector<std::vector<TaskId>> frontier(static_cast<std::size_t>(R_));
    // 2L alike blocks (forward and backward) make nearly all of the graph: the
    // limit is checked on the rate after each.
    const std::size_t blocks = 2 * static_cast<std::size_t>(L);
    for (std::int32_t l = 0; l < L; ++l) {
      forward_block(l, frontier);
      b_.progress(static_cast<std::size_t>(l) + 1, blocks);
    }
    std::vector<std::vector<TaskId>> at_done(static_cast<std::size_t>(L));
    for (std::int32_t l = L - 1; l >= 0; --l) {
      at_done[static_cast<std::size_t>(l)] = backward_block(l, frontier);
      b_.progress(2 * static_cast<std::size_t>(L) - static_cast<std::size_t>(l), blocks);
    }
    // All-reduce of each block's gradients: MHA + gate over DP, experts over EDP.
    const std::vector<TaskId> end = at_done.front();
    for (std::int32_t l = L - 1; l >= 0; --l) {
      const std::vector<TaskId>& ready = chunked_ar_ ? at_done[static_cast<std::size_t>(l)] : end;
      if (s_.parallel.dp > 1) reduce_block("ar", ar_bytes_, l, false, ready);
      if (s_.parallel.edp > 1) reduce_block("edp-ar", expert_ar_bytes_, l, true, ready);
    }
    sched::BuiltSchedule out{std::move(b_).build(), k_.schedule, R_, {}, {}, costs_.overlap_compute_slowdown()};
    out.overlap_comm_slowdown = costs_.overlap_comm_slowdown();
    if (k_.multi_rank) out.rank_compute_slowdown = sched::straggler_slowdown(s_);
    return out;
  }

 private:
  // An AT task (MHA + gating, phase 0 forward / 1 backward) or an experts task.
  TaskId compute(const std::string& name, bool experts, int phase, std::int32_t rank, Phase ph, std::int32_t layer,
                 std::int32_t mb, const std::vector<TaskId>& after) {
    const std::size_t i = static_cast<std::size_t>(phase);
    const OpClass op = experts ? OpClass::Gemm : OpClass::Attention;
    double flops = experts ? expert_flops_[i] : at_flops_[i];
    double ms = experts ? expert_ms_[i] : at_ms_[i];
    const std::optional<dag::WorkShape>* work = experts ? &expert_work_[i] : &at_work_[i];
    std::optional<dag::WorkShape> routed_work;
    if (experts && !routed_.empty()) {
      const Routed& r = routed_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(rank)];
      flops = r.expert_flops[i];
      ms = r.expert_ms[i];
      if (k_.record_work) routed_work = sched::expert_work(s_.model, s_.parallel, r.sizes, phase == 1, as_double(R_));
      work = &routed_work;
    }
    return sched::emit_task(b_, {name, ph, layer, mb, 0, 1, flops, *work ? &**work : nullptr}, dag::TaskKind::Compute,
                            op, ms, {compute_[static_cast<std::size_t>(rank)]}, after);
  }
  // A collective over the given ranks' pool (all ranks in symmetric mode: rank 0 stands for the group).
  TaskId collective(const std::string& name, OpClass op, double ms, double bytes, std::int64_t group,
                    std::int32_t first_rank, std::int32_t members, std::int32_t priority, Phase ph, std::int32_t layer,
                    std::int32_t mb, const std::vector<TaskId>& after) {
    std::vector<dag::ResourceId> pools;
    for (std::int32_t r = first_rank; r < first_rank + members; ++r)
      pools.push_back(comm_[static_cast<std::size_t>(r)]);
    return sched::emit_task(b_, {name, ph, layer, mb, priority, group, bytes}, dag::TaskKind::Communication, op, ms,
                     std::move(pools), after);
  }

  std::int32_t ep_groups() const { return ranks_ == 1 ? 1 : ranks_ / static_cast<std::int32_t>(s_.parallel.ep); }
  std::int32_t ep_members() const { return ranks_ == 1 ? 1 : static_cast<std::int32_t>(s_.parallel.ep); }

  // An A2A per EP group for micro-batch mb; `inputs[rank]` are each rank's
  // producers (one each). Returns what each rank's next stage waits for.
  // With ep = 1 every rank holds all experts: tokens never leave their rank,
  // no AlltoAll runs, and the next stage waits for the producer itself.
  std::vector<TaskId> a2a(const char* what, Phase ph, std::int32_t layer, std::int32_t mb,
                          const std::vector<std::vector<TaskId>>& inputs) {
    std::vector<TaskId> per_rank(static_cast<std::size_t>(ranks_));
    if (s_.parallel.ep == 1) {
      for (std::int32_t r = 0; r < ranks_; ++r) {
        const std::vector<TaskId>& in = inputs[static_cast<std::size_t>(r)];
        MOEPLAN_CHECK(in.size() == 1, "an AlltoAll's stage has one producer per rank");
        per_rank[static_cast<std::size_t>(r)] = in.front();
      }
      return per_rank;
    }
    for (std::int32_t g = 0; g < ep_groups(); ++g) {
      std::vector<TaskId> deps;
      for (std::int32_t r = g * ep_members(); r < (g + 1) * ep_members(); ++r)
        for (TaskId t : inputs[static_cast<std::size_t>(r)]) deps.push_back(t);
      // All-to-all-v under uneven load: the collective ends with its slowest
      // member, priced at that member's max(send, receive) bytes.
      double ms = a2a_ms_, bytes = a2a_bytes_;
      if (!routed_.empty()) {
        ms = bytes = 0;
        for (std::int32_t r = g * ep_members(); r < (g + 1) * ep_members(); ++r) {
          const Routed& load = routed_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(r)];
          if (load.a2a_ms > ms || (load.a2a_ms == ms && load.a2a_bytes > bytes)) {
            ms = load.a2a_ms;
            bytes = load.a2a_bytes;
          }
        }
      }
      const TaskId id = collective(fmt::format("{} L{} {} m{}", ph == Phase::Forward ? "fwd" : "bwd", layer, what, mb),
                                   OpClass::A2A, ms, bytes, s_.parallel.ep, g * ep_members(), ep_members(),
                                   kA2APriority, ph, layer, mb, deps);
      for (std::int32_t r = g * ep_members(); r < (g + 1) * ep_members(); ++r)
        per_rank[static_cast<std::size_t>(r)] = id;
    }
    return per_rank;
  }

  // One block's all-reduce of `bytes`: in chunks of Sp in the pool (flowmoe-ar,
  // flowmoe) after the block's backward, else whole after the backward pass
  // (`after` says which).
  void reduce_block(const char* what, double bytes, std::int32_t l, bool expert, const std::vector<TaskId>& after) {
    if (bytes <= 0) return;
    if (!chunked_ar_) {
      allreduce(fmt::format("{} L{}", what, l), bytes, l, 0, expert, after);  // centralised
      return;
    }
    const double chunk = static_cast<double>(std::max<std::int64_t>(1, k_.ar_chunk_bytes));
    const std::int64_t chunks = static_cast<std::int64_t>(std::ceil(bytes / chunk));
    for (std::int64_t c = 0; c < chunks; ++c)
      allreduce(fmt::format("{} L{} chunk {}", what, l, c), std::min(chunk, bytes - as_double(c) * chunk), l,
                static_cast<std::int32_t>(c), expert, after);
  }

  // An all-reduce over DP (every rank) or over EDP (in multi-rank mode one
  // collective per EDP group: ranks g, g + ep, ..., which wait only for their
  // own members). `after[rank]` are each rank's producers.
  void allreduce(const std::string& name, double bytes, std::int32_t layer, std::int32_t index, bool expert,
                 const std::vector<TaskId>& after) {
    const cost::GroupShape& group = expert ? edp_group_ : dp_group_;
    const double ms = costs_.communication(OpClass::AllReduce, group, bytes).value;
    if (!expert || ranks_ == 1) {
      collective(name, OpClass::AllReduce, ms, bytes, group.size, 0, ranks_, kAllReducePriority, Phase::Backward, layer,
                 index, after);
      return;
    }
    const std::int32_t ep = static_cast<std::int32_t>(s_.parallel.ep);
    for (std::int32_t g = 0; g < ep; ++g) {
      std::vector<dag::ResourceId> pools;
      std::vector<TaskId> deps;
      for (std::int32_t r = g; r < ranks_; r += ep) {
        pools.push_back(comm_[static_cast<std::size_t>(r)]);
        deps.push_back(after[static_cast<std::size_t>(r)]);
      }
      sched::emit_task(b_, {name, Phase::Backward, layer, index, kAllReducePriority, group.size, bytes},
                dag::TaskKind::Communication, OpClass::AllReduce, ms, std::move(pools), deps);
    }
  }

  // Forward of block l (Eqs. 2 and 3). frontier[mb][rank]: what micro-batch mb waits for.
  void forward_block(std::int32_t l, std::vector<std::vector<TaskId>>& frontier) {
    const std::size_t R = static_cast<std::size_t>(R_);
    std::vector<std::vector<TaskId>> at(R, std::vector<TaskId>(static_cast<std::size_t>(ranks_)));
    for (std::int32_t rank = 0; rank < ranks_; ++rank) {
      if (split_attention_) {
        for (std::size_t m = 0; m < R; ++m) {
          std::vector<TaskId> deps;
          if (!frontier[m].empty()) deps.push_back(frontier[m][static_cast<std::size_t>(rank)]);
          at[m][static_cast<std::size_t>(rank)] = compute(fmt::format("fwd L{} AT m{}", l, m), false, 0, rank,
                                                          Phase::Forward, l, static_cast<std::int32_t>(m), deps);
        }
      } else {
        std::vector<TaskId> deps;
        for (std::size_t m = 0; m < R; ++m)
          if (!frontier[m].empty()) deps.push_back(frontier[m][static_cast<std::size_t>(rank)]);
        const TaskId whole = compute(fmt::format("fwd L{} AT", l), false, 0, rank, Phase::Forward, l, -1, deps);
        for (std::size_t m = 0; m < R; ++m) at[m][static_cast<std::size_t>(rank)] = whole;
      }
    }
    std::vector<std::vector<TaskId>> dispatched(R);
    for (std::size_t m = 0; m < R; ++m) {
      std::vector<std::vector<TaskId>> inputs(static_cast<std::size_t>(ranks_));
      for (std::int32_t r = 0; r < ranks_; ++r)
        inputs[static_cast<std::size_t>(r)] = {at[m][static_cast<std::size_t>(r)]};
      dispatched[m] = a2a("dispatch", Phase::Forward, l, static_cast<std::int32_t>(m), inputs);
    }
    std::vector<std::vector<TaskId>> experts(R, std::vector<TaskId>(static_cast<std::size_t>(ranks_)));
    for (std::int32_t rank = 0; rank < ranks_; ++rank)
      for (std::size_t m = 0; m < R; ++m)
        experts[m][static_cast<std::size_t>(rank)] =
            compute(fmt::format("fwd L{} experts m{}", l, m), true, 0, rank, Phase::Forward, l,
                    static_cast<std::int32_t>(m), {dispatched[m][static_cast<std::size_t>(rank)]});
    for (std::size_t m = 0; m < R; ++m) {
      std::vector<std::vector<TaskId>> inputs(static_cast<std::size_t>(ranks_));
      for (std::int32_t r = 0; r < ranks_; ++r)
        inputs[static_cast<std::size_t>(r)] = {experts[m][static_cast<std::size_t>(r)]};
      frontier[m] = a2a("combine", Phase::Forward, l, static_cast<std::int32_t>(m), inputs);
    }
  }

  // Backward of block l (Eqs. 4 and 5, constraints 6a-6d); returns each rank's
  // last AT task of the block, which the block's all-reduce waits for (6e).
  std::vector<TaskId> backward_block(std::int32_t l, std::vector<std::vector<TaskId>>& frontier) {
    const std::size_t R = static_cast<std::size_t>(R_);
    std::vector<std::vector<TaskId>> combined(R);
    for (std::size_t i = 0; i < R; ++i) {
      const std::size_t m = R - 1 - i;
      std::vector<std::vector<TaskId>> inputs(static_cast<std::size_t>(ranks_));
      for (std::int32_t r = 0; r < ranks_; ++r)
        inputs[static_cast<std::size_t>(r)] = {frontier[m][static_cast<std::size_t>(r)]};
      combined[m] = a2a("combine", Phase::Backward, l, static_cast<std::int32_t>(m), inputs);
    }
    std::vector<std::vector<TaskId>> experts(R, std::vector<TaskId>(static_cast<std::size_t>(ranks_)));
    for (std::int32_t rank = 0; rank < ranks_; ++rank)
      for (std::size_t i = 0; i < R; ++i) {
        const std::size_t m = R - 1 - i;
        experts[m][static_cast<std::size_t>(rank)] =
            compute(fmt::format("bwd L{} experts m{}", l, m), true, 1, rank, Phase::Backward, l,
                    static_cast<std::int32_t>(m), {combined[m][static_cast<std::size_t>(rank)]});
      }
    std::vector<std::vector<TaskId>> dispatched(R);
    for (std::size_t i = 0; i < R; ++i) {
      const std::size_t m = R - 1 - i;
      std::vector<std::vector<TaskId>> inputs(static_cast<std::size_t>(ranks_));
      for (std::int32_t r = 0; r < ranks_; ++r)
        inputs[static_cast<std::size_t>(r)] = {experts[m][static_cast<std::size_t>(r)]};
      dispatched[m] = a2a("dispatch", Phase::Backward, l, static_cast<std::int32_t>(m), inputs);
    }
    std::vector<TaskId> last(static_cast<std::size_t>(ranks_));
    for (std::int32_t rank = 0; rank < ranks_; ++rank) {
      if (split_attention_) {
        for (std::size_t i = 0; i < R; ++i) {
          const std::size_t m = R - 1 - i;
          const TaskId at = compute(fmt::format("bwd L{} AT m{}", l, m), false, 1, rank, Phase::Backward, l,
                                    static_cast<std::int32_t>(m), {dispatched[m][static_cast<std::size_t>(rank)]});
          frontier[m][static_cast<std::size_t>(rank)] = at;
          last[static_cast<std::size_t>(rank)] = at;
        }
      } else {
        std::vector<TaskId> deps;
        for (std::size_t m = 0; m < R; ++m) deps.push_back(dispatched[m][static_cast<std::size_t>(rank)]);
        const TaskId at = compute(fmt::format("bwd L{} AT", l), false, 1, rank, Phase::Backward, l, -1, deps);
        for (std::size_t m = 0; m < R; ++m) frontier[m][static_cast<std::size_t>(rank)] = at;
        last[static_cast<std::size_t>(rank)] = at;
      }
    }
    return last;
  }

  // Per layer and rank of the graph, the routed sizes of one of the R pieces of
  // the micro-batch (each carries 1/R of its drawn load). Symmetric mode's one
  // rank stands for each layer's most loaded rank of one EP group.
  void route() {
    const model::ParallelSpec& p = s_.parallel;
    const std::int64_t drawn = ranks_ == 1 ? p.ep : ranks_;
    const cost::RoutedLoads loads = cost::route(s_, drawn);
    const double rr = as_double(R_);
    routed_.resize(loads.layers.size());
    for (std::size_t l = 0; l < loads.layers.size(); ++l) {
      const std::vector<cost::RankLoad>& layer = loads.layers[l];
      std::vector<std::size_t> which;
      if (ranks_ == 1) {
        which.push_back(cost::most_loaded_rank(layer));
      } else {
        for (std::size_t r = 0; r < layer.size(); ++r) which.push_back(r);
      }
      for (std::size_t r : which) {
        const cost::MoeLayerSizes m = cost::moe_layer_sizes_for(s_.model, p, s_.workload, layer[r]);
        Routed out;
        out.sizes = m;
        out.a2a_bytes = m.dispatch_bytes / rr;
        out.a2a_ms = costs_.communication(OpClass::A2A, ep_group_, out.a2a_bytes).value;
        for (int phase = 0; phase < 2; ++phase) {
          const std::size_t i = static_cast<std::size_t>(phase);
          out.expert_flops[i] = (phase == 0 ? m.expert_forward_flops : m.expert_backward_flops) / rr;
          out.expert_ms[i] = cost::expert_ffn_time(costs_, s_.model, p, m, phase == 1, rr).value;
        }
        routed_[l].push_back(out);
      }
    }
  }

  struct Routed {
    cost::MoeLayerSizes sizes;  // the whole micro-batch's
    double a2a_bytes = 0, a2a_ms = 0;
    double expert_flops[2] = {0, 0}, expert_ms[2] = {0, 0};
  };

  const model::ScenarioSpec& s_;
  const cost::CostModel& costs_;
  const FlowMoeKnobs& k_;
  std::vector<std::vector<Routed>> routed_;  ///< [layer][rank of the graph]; empty: every rank alike
  Kind kind_;
  std::int64_t R_ = 1;
  bool split_attention_ = false, chunked_ar_ = false;
  std::int32_t ranks_ = 1;
  dag::TaskGraphBuilder b_;
  std::vector<dag::ResourceId> compute_, comm_;
  cost::GroupShape ep_group_, dp_group_, edp_group_;
  double a2a_ms_ = 0, a2a_bytes_ = 0, ar_bytes_ = 0, expert_ar_bytes_ = 0;
  double expert_ms_[2] = {0, 0}, at_ms_[2] = {0, 0}, expert_flops_[2] = {0, 0}, at_flops_[2] = {0, 0};
  std::optional<dag::WorkShape> expert_work_[2], at_work_[2];  // when recorded (FlowMoeKnobs::record_work)
};

}  // namespace

const std::vector<std::string>& flowmoe_schedules() { return rules().schedules(); }

double flowmoe_block_allreduce_bytes(const model::ScenarioSpec& s) {
  const double dense = cost::dense_gradient_bytes_per_block(s.model, s.parallel);
  const double expert = s.parallel.edp > 1 ? cost::expert_gradient_bytes_per_block(s.model, s.parallel) : 0.0;
  return std::max(dense, expert);
}

sched::BuiltSchedule build_flowmoe(const model::ScenarioSpec& s, const cost::CostModel& costs, const FlowMoeKnobs& knobs) {
  if (knobs.degree < 1 || knobs.degree > 64)
    throw Error(ErrorKind::Input, fmt::format("degree {} is outside 1..64", knobs.degree), "schedule.degree");
  if (knobs.ar_chunk_bytes < 1)
    throw Error(ErrorKind::Input, "ar_chunk_bytes must be positive", "schedule.ar_chunk_bytes");
  return Builder(s, costs, knobs).build();
}

}  // namespace moeplan::flowmoe
