#include <moeplan/family/foldmoe/builder.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/expert_pricing.hpp>
#include <moeplan/cost/routing.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/family/foldmoe/rules.hpp>
#include <moeplan/model/model_stats.hpp>
#include <moeplan/sched/slicing.hpp>
#include <moeplan/sched/work_shapes.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::foldmoe {
namespace {

using dag::Phase;
using dag::TaskId;
using model::OpClass;

enum class Kind { None, Tutel, Aaam, OneAOneM, OneAOneMUniform };

Kind kind_of(const std::string& name) {
  if (name == "none") return Kind::None;
  if (name == "tutel") return Kind::Tutel;
  if (name == "aaam") return Kind::Aaam;
  if (name == "1a1m") return Kind::OneAOneM;
  if (name == "1a1m-uniform") return Kind::OneAOneMUniform;
  throw Error(ErrorKind::Input,
              fmt::format("schedule '{}' is not a FoldMoE schedule (none, tutel, aaam, 1a1m, "
                          "1a1m-uniform)",
                          name),
              "schedule.name");
}


// Sizes and group shapes of one scenario, priced through the cost model.
struct Pricing {
  const model::ScenarioSpec& s;
  const cost::CostModel& costs;
  cost::GroupShape tp_group, ep_group, etp_group, dp_group, edp_group;
  double mbs;       // sequences per micro-batch
  double sp_split;  // tp with sequence parallelism, else 1
  cost::MoeLayerSizes routed;  // one micro-batch's MoE layer, as cost::routed_moe_layer_sizes prices it
  // Multi-rank with dropless uneven routing: each rank's own sizes, [MoE layer][rank]
  // (cost::route over the layout's EP groups); empty: every rank is priced at `routed`.
  std::vector<std::vector<cost::MoeLayerSizes>> rank_sizes;
  std::vector<std::int64_t> moe_index;  // block -> MoE layer index, -1 for dense blocks

  Pricing(const model::ScenarioSpec& scenario, const cost::CostModel& c, const sched::RankLayout& layout)
      : s(scenario), costs(c) {
    const model::ParallelSpec& p = s.parallel;
    // Megatron order tp-cp-ep-dp-pp: tp innermost; experts etp then ep.
    tp_group = cost::strided_group_shape(p.tp, 1, s.cluster);
    etp_group = cost::strided_group_shape(p.etp, 1, s.cluster);
    ep_group = cost::strided_group_shape(p.ep, p.etp, s.cluster);
    dp_group = cost::strided_group_shape(p.dp, p.tp * p.cp, s.cluster);
    edp_group = cost::strided_group_shape(p.edp, p.etp * p.ep, s.cluster);
    mbs = as_double(s.workload.micro_batch_size);
    sp_split = p.sequence_parallel ? as_double(p.tp) : 1.0;
    routed = cost::routed_moe_layer_sizes(s);  // uneven expert load: the most loaded rank (docs/cost-model.md)
    std::int64_t next = 0;
    for (bool moe : s.model.moe_layer) moe_index.push_back(moe ? next++ : -1);
    if (layout.ranks > 1 && s.workload.routing != model::Routing::Balanced) {
      const cost::RoutedLoads loads = cost::route(s, layout.ep);
      if (!loads.padded)  // padded buffers keep the balanced sizes on every rank
        for (const std::vector<cost::RankLoad>& layer : loads.layers) {
          rank_sizes.emplace_back();
          for (const cost::RankLoad& load : layer)
            rank_sizes.back().push_back(cost::moe_layer_sizes_for(s.model, p, s.workload, load));
        }
    }
  }

  double compute(OpClass op, double flops) const { return costs.compute(op, flops).value; }
  double expert_ms(double flops) const {
    return cost::expert_ffn_time(costs, flops, s.model.moe.expert_type == model::FfnType::GeluFfn ? 2 : 3).value;
  }
  // By shape when the profile has a GEMM shape model (cost/expert_pricing.hpp), else as expert_ms(flops).
  double expert_ms(const cost::MoeLayerSizes& sizes, bool backward) const {
    return cost::expert_ffn_time(costs, s.model, s.parallel, sizes, backward, 1.0).value;
  }
  double comm(OpClass op, const cost::GroupShape& group, double bytes) const {
    return costs.communication(op, group, bytes).value;
  }
  double activation_bytes(double tokens) const {
    return mbs * tokens / as_double(s.parallel.cp) * as_double(s.model.d_model) * as_double(s.model.dtype_bytes);
  }
  // FLOPs of a slice of l queries at the end of a c-token context (the causal
  // rule of cost::attention_flops), heads split over tp; backward is 2x.
  double attention_flops(double l, double c, bool backward) const {
    return cost::attention_flops_per_rank(s.model, s.parallel, (backward ? 2.0 : 1.0) * mbs, l, c);
  }
  // The slice's time: by the profile's attention shape model when it has one
  // (the projections of its tokens and the core of its l queries after c - l
  // earlier tokens), else the attention line on attention_flops.
  double attention_ms(double l, double c, bool backward) const {
    return costs.attention(s.model, std::llround(l), std::llround(c), attention_flops(l, c, backward)).value;
  }
  double gate_tokens(double l) const { return mbs * l / sp_split / as_double(s.parallel.cp); }
  double gate_flops(double l, bool backward) const {
    return (backward ? 2.0 : 1.0) * 2.0 * gate_tokens(l) * as_double(s.model.d_model) *
           as_double(s.model.moe.num_experts);
  }
  double dense_ffn_flops(double l, bool backward) const {
    const double gemms = s.model.ffn_type == model::FfnType::GeluFfn ? 2.0 : 3.0;
    return (backward ? 2.0 : 1.0) * mbs * l / as_double(s.parallel.cp) * gemms * 2.0 * as_double(s.model.d_model) *
           as_double(s.model.ffn_hidden) / as_double(s.parallel.tp);
  }
  // The shapes of those FLOPs, for the executor (sched/work_shapes.hpp).
  dag::WorkShape gate_work(double l, bool backward) const {
    return sched::router_work(s.model, gate_tokens(l), backward);
  }
  dag::WorkShape dense_ffn_work(double l, bool backward) const {
    return sched::dense_ffn_work(s.model, mbs * l / as_double(s.parallel.cp),
                                 as_double(s.model.ffn_hidden) / as_double(s.parallel.tp), backward);
  }
  // An MoE micro-batch of m tokens of each sequence, on `rank` in block `layer`.
  cost::MoeLayerSizes moe_sizes(double m, std::int32_t layer, std::int64_t rank) const {
    cost::MoeLayerSizes full = routed;
    if (!rank_sizes.empty())
      full = rank_sizes[static_cast<std::size_t>(moe_index[static_cast<std::size_t>(layer)])]
                       [static_cast<std::size_t>(rank)];
    const double share = m / as_double(s.workload.seq_len);
    full.dispatch_bytes *= share;
    full.combine_bytes *= share;
    full.etp_allgather_bytes *= share;
    full.etp_reducescatter_bytes *= share;
    full.expert_forward_flops *= share;
    full.expert_backward_flops *= share;
    full.expert_slots *= share;
    full.tokens_per_rank *= share;
    return full;
  }
};

// Emits tasks onto the ranks' streams (rank 0 alone in symmetric mode),
// recording the forward program so the backward pass can replay it reversed in
// time. Every rank gets the same program, in the same issue order.
class FoldBuilder {
 public:
  FoldBuilder(const Pricing& pricing, const sched::RankLayout& layout, bool record_work)
      : p_(pricing), layout_(layout), record_work_(record_work) {
    for (std::int32_t r = 0; r < layout.ranks; ++r) {
      compute_.push_back(b_.add_resource({"compute", r, dag::DispatchPolicy::InOrder}));
      comm_.push_back(b_.add_resource({"comm", r, dag::DispatchPolicy::InOrder}));
      intra_.push_back(b_.add_resource({"intra", r, dag::DispatchPolicy::InOrder}));
    }
  }

  // A task's work shape when the build records them (ScheduleKnobs::record_work), else none.
  template <class Shape>
  std::optional<dag::WorkShape> work(const Shape& shape) const {
    return record_work_ ? std::optional<dag::WorkShape>(shape()) : std::nullopt;
  }
  // A compute task of `flops` on every rank, priced on the op's line; `work` its shape, when recorded.
  sched::RankTasks compute(const std::string& name, OpClass op, double flops, Phase ph, std::int32_t layer,
                           std::int32_t i, const std::vector<sched::RankTasks>& after,
                           const std::optional<dag::WorkShape>& work = {}) {
    return sched::emit_on_ranks(b_, {name, ph, layer, i, 0, 1, flops, work ? &*work : nullptr}, dag::TaskKind::Compute,
                                op, p_.compute(op, flops), compute_, after);
  }
  // The attention of a slice of l queries at the end of a c-token context.
  sched::RankTasks attention(const std::string& name, double l, double c, bool backward, Phase ph, std::int32_t layer,
                      std::int32_t i, const std::vector<sched::RankTasks>& after) {
    const double flops = p_.attention_flops(l, c, backward);
    const std::optional<dag::WorkShape> shape =
        work([&] { return sched::attention_work(p_.s.model, std::llround(l), std::llround(c), flops); });
    return sched::emit_on_ranks(b_, {name, ph, layer, i, 0, 1, flops, shape ? &*shape : nullptr},
                                dag::TaskKind::Compute, OpClass::Attention, p_.attention_ms(l, c, backward), compute_,
                                after);
  }
  // The experts of a micro-batch: `flops` over the expert's GEMMs, each paying its startup.
  sched::RankTasks experts(const std::string& name, double flops, Phase ph, std::int32_t layer, std::int32_t i,
                    const std::vector<sched::RankTasks>& after) {
    return sched::emit_on_ranks(b_, {name, ph, layer, i, 0, 1, flops}, dag::TaskKind::Compute, OpClass::Gemm,
                         p_.expert_ms(flops), compute_, after);
  }
  // The experts of a micro-batch when ranks differ: rank r computes the experts of sizes_of(r).
  sched::RankTasks experts(const std::string& name, const std::function<cost::MoeLayerSizes(std::int64_t)>& sizes_of,
                    bool backward, Phase ph, std::int32_t layer, std::int32_t i, const std::vector<sched::RankTasks>& after) {
    return sched::emit_on_ranks(
        b_, {name, ph, layer, i, 0, 1, 0}, dag::TaskKind::Compute, OpClass::Gemm,
        [&](std::int64_t r) {
          const cost::MoeLayerSizes sizes = sizes_of(r);
          return sched::RankCost{
              p_.expert_ms(sizes, backward), backward ? sizes.expert_backward_flops : sizes.expert_forward_flops,
              work([&] { return sched::expert_work(p_.s.model, p_.s.parallel, sizes, backward, 1.0); })};
        },
        compute_, after);
  }
  // A collective whose members move different bytes (all-to-all-v): each group waits for its slowest member.
  sched::RankTasks collective(const std::string& name, OpClass op, const std::vector<dag::ResourceId>& on,
                       const cost::GroupShape& group, const parallel::RankGroups& groups,
                       const std::function<double(std::int64_t)>& bytes_of, Phase ph, std::int32_t layer,
                       std::int32_t i, const std::vector<sched::RankTasks>& after) {
    return sched::emit_collective(
        b_, {name, ph, layer, i, 0, group.size, 0}, op,
        [&](std::int64_t r) {
          const double bytes = bytes_of(r);
          return sched::RankCost{p_.comm(op, group, bytes), bytes};
        },
        groups, on, after);
  }
  // A collective of `bytes` priced over `group`, one per rank group `groups`, on one of the ranks' streams.
  sched::RankTasks collective(const std::string& name, OpClass op, const std::vector<dag::ResourceId>& on,
                       const cost::GroupShape& group, const parallel::RankGroups& groups, double bytes, Phase ph,
                       std::int32_t layer, std::int32_t i, const std::vector<sched::RankTasks>& after) {
    return sched::emit_collective(b_, {name, ph, layer, i, 0, group.size, bytes}, op, p_.comm(op, group, bytes), groups, on,
                           after);
  }

  dag::TaskGraphBuilder& graph() { return b_; }
  const std::vector<dag::ResourceId>& comm() const { return comm_; }
  const std::vector<dag::ResourceId>& intra() const { return intra_; }
  const sched::RankLayout& layout() const { return layout_; }

 private:
  const Pricing& p_;
  const sched::RankLayout& layout_;
  bool record_work_;
  dag::TaskGraphBuilder b_;
  std::vector<dag::ResourceId> compute_, comm_, intra_;
};

// One step of a block's forward program: an attention slice, or one MoE stage of a micro-batch.
struct Step {
  enum Type { Attention, Dispatch, Expert, Combine } type;
  std::size_t index;
};

// The order tasks are issued to the streams (foldmoe.md Fig. 7). `lag`: MoE
// micro-batch j's experts are issued `lag` attention slices after its tokens
// are complete (1 for 1A1M; none = after all attention, for aAaM and Tutel).
std::vector<Step> forward_program(std::size_t slices, const std::vector<std::size_t>& ready_after,
                                  std::optional<std::size_t> lag) {
  std::vector<Step> program;
  std::size_t next_expert = 0;
  const std::size_t batches = ready_after.size();
  for (std::size_t k = 0; k < slices; ++k) {
    program.push_back({Step::Attention, k});
    std::vector<std::size_t> issued;
    if (lag)
      while (next_expert < batches && ready_after[next_expert] + *lag <= k) {
        program.push_back({Step::Expert, next_expert});
        issued.push_back(next_expert++);
      }
    for (std::size_t j = 0; j < batches; ++j)
      if (ready_after[j] == k) program.push_back({Step::Dispatch, j});
    for (std::size_t j : issued) program.push_back({Step::Combine, j});
  }
  for (; next_expert < batches; ++next_expert) program.push_back({Step::Expert, next_expert});
  // Combines not yet issued, in order.
  std::vector<bool> combined(batches, false);
  for (const Step& s : program)
    if (s.type == Step::Combine) combined[s.index] = true;
  for (std::size_t j = 0; j < batches; ++j)
    if (!combined[j]) program.push_back({Step::Combine, j});
  return program;
}

class IterationBuilder {
 public:
  IterationBuilder(const model::ScenarioSpec& s, const Pricing& pricing, const sched::RankLayout& layout, Kind kind,
                   std::int64_t degree, const std::vector<std::int64_t>& slicing, bool multi_rank, bool record_work)
      : s_(s), p_(pricing), fb_(pricing, layout, record_work), kind_(kind), degree_(degree), multi_rank_(multi_rank) {
    const std::int64_t L = s.workload.seq_len;
    const std::int64_t d = kind == Kind::None ? 1 : degree;
    moe_ = sched::token_uniform_slicing(L, d);
    if (!slicing.empty()) {
      attention_ = slicing;  // the user's slices (build_foldmoe checked them)
    } else {
      switch (kind) {
        case Kind::None:
        case Kind::Tutel:
          attention_ = {L};
          break;
        case Kind::Aaam:
        case Kind::OneAOneM:
          attention_ = sched::token_uniform_slicing(L, d);
          break;
        case Kind::OneAOneMUniform:
          attention_ = sched::time_uniform_slicing(s.model, L, d);
          break;
      }
    }
    ready_after_ = sched::buffer_ready_after(attention_, moe_);
    covering_ = sched::moe_batches_of_slices(attention_, moe_);
    const std::optional<std::size_t> lag =
        kind == Kind::OneAOneM || kind == Kind::OneAOneMUniform ? std::optional<std::size_t>(1) : std::nullopt;
    program_ = forward_program(attention_.size(), ready_after_, lag);
  }

  sched::BuiltSchedule build(const std::string& name) {
    const std::int64_t per_rank_batches = s_.workload.micro_batches_per_rank(s_.parallel.dp);
    std::optional<sched::RankTasks> last;
    // Graph bound (issue 14 item 4): checked on the rate after each layer pass
    // (of every rank in multi-rank mode).
    fb_.graph().set_limit(sched::graph_limit(s_.limits));
    const std::size_t passes = 2 * static_cast<std::size_t>(per_rank_batches) * s_.model.moe_layer.size();
    std::size_t done = 0;
    for (std::int64_t n = 0; n < per_rank_batches; ++n) {
      for (std::int32_t layer = 0; layer < static_cast<std::int32_t>(s_.model.num_layers); ++layer) {
        last =
            s_.model.moe_layer[static_cast<std::size_t>(layer)] ? moe_forward(layer, last) : dense(layer, last, false);
        fb_.graph().progress(++done, passes);
      }
      for (std::int32_t layer = static_cast<std::int32_t>(s_.model.num_layers) - 1; layer >= 0; --layer) {
        last =
            s_.model.moe_layer[static_cast<std::size_t>(layer)] ? moe_backward(layer, *last) : dense(layer, last, true);
        fb_.graph().progress(++done, passes);
      }
    }
    gradient_allreduce(*last);
    sched::BuiltSchedule out{std::move(fb_.graph()).build(), name, kind_ == Kind::None ? 1 : degree_, {}, {}};
    if (kind_ != Kind::None && kind_ != Kind::Tutel) out.slicing_tokens = attention_;
    if (multi_rank_) out.rank_compute_slowdown = sched::straggler_slowdown(s_);
    return out;
  }

 private:
  static std::vector<sched::RankTasks> after(const std::optional<sched::RankTasks>& t) {
    return t ? std::vector<sched::RankTasks>{*t} : std::vector<sched::RankTasks>{};
  }
  const sched::RankLayout& groups() const { return fb_.layout(); }

  // Attention of one slice with its TP collectives; returns the tasks the MoE
  // layer's input waits for. Forward: [AG] ATT [RS|AR]; backward mirrors it.
  sched::RankTasks attention_slice(std::int32_t layer, std::size_t k, double l, double c, std::vector<sched::RankTasks> deps,
                            const std::optional<sched::RankTasks>& previous_attention, bool backward) {
    const Phase ph = backward ? Phase::Backward : Phase::Forward;
    const char* dir = backward ? "bwd" : "fwd";
    const std::int32_t i = static_cast<std::int32_t>(k);
    const model::ParallelSpec& par = s_.parallel;
    const double bytes = p_.activation_bytes(l);
    if (par.tp > 1 && par.sequence_parallel) {
      // Forward AllGather -> attention -> ReduceScatter; backward: the adjoints, AllGather first again.
      const sched::RankTasks ag = fb_.collective(fmt::format("{} L{} attn-ag s{}", dir, layer, k), OpClass::AllGather,
                                          fb_.intra(), p_.tp_group, groups().tp, bytes, ph, layer, i, deps);
      std::vector<sched::RankTasks> att_deps{ag};
      if (previous_attention) att_deps.push_back(*previous_attention);
      const sched::RankTasks att =
          fb_.attention(fmt::format("{} L{} attention s{}", dir, layer, k), l, c, backward, ph, layer, i, att_deps);
      last_attention_ = att;
      return fb_.collective(fmt::format("{} L{} attn-rs s{}", dir, layer, k), OpClass::ReduceScatter, fb_.intra(),
                            p_.tp_group, groups().tp, bytes, ph, layer, i, {att});
    }
    if (previous_attention) deps.push_back(*previous_attention);
    const sched::RankTasks att =
        fb_.attention(fmt::format("{} L{} attention s{}", dir, layer, k), l, c, backward, ph, layer, i, deps);
    last_attention_ = att;
    if (par.tp > 1)
      return fb_.collective(fmt::format("{} L{} attn-ar s{}", dir, layer, k), OpClass::AllReduce, fb_.intra(),
                            p_.tp_group, groups().tp, bytes, ph, layer, i, {att});
    return att;
  }

  // The experts of MoE micro-batch j: [ETP AllGather] experts [ETP ReduceScatter];
  // backward gathers and scatters the gradients of the same tensors.
  // `input`: what the stage waits for (the A2A, or with ep = 1 its producers).
  sched::RankTasks expert_stage(std::int32_t layer, std::size_t j, double m, std::vector<sched::RankTasks> input, bool backward) {
    const model::ParallelSpec& par = s_.parallel;
    const Phase ph = backward ? Phase::Backward : Phase::Forward;
    const char* dir = backward ? "bwd" : "fwd";
    const std::int32_t i = static_cast<std::int32_t>(j);
    // Each rank's sizes: its own received tokens under uneven dropless routing, else every rank alike.
    auto sized = [&](double cost::MoeLayerSizes::*field) {
      return [this, m, layer, field](std::int64_t r) { return p_.moe_sizes(m, layer, r).*field; };
    };
    if (par.etp > 1)
      input = {fb_.collective(fmt::format("{} L{} etp-ag m{}", dir, layer, j), OpClass::AllGather, fb_.intra(),
                              p_.etp_group, groups().etp, sized(&cost::MoeLayerSizes::etp_allgather_bytes), ph, layer,
                              i, input)};
    sched::RankTasks e = fb_.experts(
        fmt::format("{} L{} experts m{}", dir, layer, j),
        [this, m, layer](std::int64_t r) { return p_.moe_sizes(m, layer, r); }, backward, ph, layer, i, input);
    if (par.etp > 1)
      e = fb_.collective(fmt::format("{} L{} etp-rs m{}", dir, layer, j), OpClass::ReduceScatter, fb_.intra(),
                         p_.etp_group, groups().etp, sized(&cost::MoeLayerSizes::etp_reducescatter_bytes), ph, layer,
                         i, {e});
    return e;
  }

  // With ep = 1 every rank holds all experts: tokens stay on their rank, no
  // AlltoAll runs, and each stage waits for what the A2A would have.
  bool a2a() const { return s_.parallel.ep > 1; }

  // An AlltoAll of `bytes` over each EP group.
  // An AlltoAll of MoE micro-batch m over each EP group: each member's `field` bytes, the slowest member's time.
  sched::RankTasks alltoall(const std::string& name, double m, double cost::MoeLayerSizes::*field, Phase ph,
                     std::int32_t layer, std::int32_t i, const std::vector<sched::RankTasks>& deps) {
    return fb_.collective(
        name, OpClass::A2A, fb_.comm(), p_.ep_group, groups().ep,
        [this, m, layer, field](std::int64_t r) { return p_.moe_sizes(m, layer, r).*field; }, ph, layer, i, deps);
  }

  sched::RankTasks moe_forward(std::int32_t layer, const std::optional<sched::RankTasks>& entry) {
    std::vector<sched::RankTasks> gate(attention_.size()), expert(moe_.size());
    std::vector<std::vector<sched::RankTasks>> dispatch(moe_.size());
    std::optional<sched::RankTasks> previous_attention, last;
    std::vector<std::int64_t> context(attention_.size());
    std::int64_t c = 0;
    for (std::size_t k = 0; k < attention_.size(); ++k) context[k] = (c += attention_[k]);
    for (const Step& step : program_) {
      const std::int32_t i = static_cast<std::int32_t>(step.index);
      const double m = as_double(moe_[step.index < moe_.size() ? step.index : 0]);
      switch (step.type) {
        case Step::Attention: {
          const std::size_t k = step.index;
          const sched::RankTasks out = attention_slice(layer, k, as_double(attention_[k]), as_double(context[k]),
                                                after(entry), previous_attention, false);
          previous_attention = last_attention_;
          gate[k] = fb_.compute(fmt::format("fwd L{} gate s{}", layer, k), OpClass::Gemm,
                                p_.gate_flops(as_double(attention_[k]), false), Phase::Forward, layer, i, {out},
                                fb_.work([&] { return p_.gate_work(as_double(attention_[k]), false); }));
          break;
        }
        case Step::Dispatch: {
          std::vector<sched::RankTasks> deps;
          for (std::size_t k = 0; k < attention_.size(); ++k)
            if (covering_[k].first <= step.index && step.index <= covering_[k].second) deps.push_back(gate[k]);
          dispatch[step.index] =
              a2a() ? std::vector<sched::RankTasks>{alltoall(fmt::format("fwd L{} dispatch m{}", layer, step.index), m,
                                                      &cost::MoeLayerSizes::dispatch_bytes, Phase::Forward, layer, i,
                                                      deps)}
                    : deps;
          break;
        }
        case Step::Expert:
          expert[step.index] = expert_stage(layer, step.index, m, dispatch[step.index], false);
          break;
        case Step::Combine: {
          last = a2a() ? alltoall(fmt::format("fwd L{} combine m{}", layer, step.index), m,
                                  &cost::MoeLayerSizes::combine_bytes, Phase::Forward, layer, i, {expert[step.index]})
                       : expert[step.index];
          break;
        }
      }
    }
    // The last combine issued on the in-order comm stream ends last: the block
    // is done. Without A2A: the last micro-batch's experts, issued last on
    // their streams.
    return *last;
  }

  sched::RankTasks moe_backward(std::int32_t layer, const sched::RankTasks& entry) {
    std::vector<sched::RankTasks> expert(moe_.size()), dispatch_grad(moe_.size());
    std::vector<std::vector<sched::RankTasks>> combine_grad(moe_.size());
    std::vector<std::int64_t> context(attention_.size());
    std::int64_t c = 0;
    for (std::size_t k = 0; k < attention_.size(); ++k) context[k] = (c += attention_[k]);
    std::optional<sched::RankTasks> later_attention, last;
    // The forward program reversed in time: every stream sees its forward order backwards.
    for (auto it = program_.rbegin(); it != program_.rend(); ++it) {
      const Step& step = *it;
      const std::int32_t i = static_cast<std::int32_t>(step.index);
      const double m = as_double(moe_[step.index < moe_.size() ? step.index : 0]);
      switch (step.type) {
        case Step::Combine: {
          combine_grad[step.index] =
              a2a() ? std::vector<sched::RankTasks>{alltoall(fmt::format("bwd L{} combine m{}", layer, step.index), m,
                                                      &cost::MoeLayerSizes::combine_bytes, Phase::Backward, layer, i,
                                                      {entry})}
                    : std::vector<sched::RankTasks>{entry};
          break;
        }
        case Step::Expert:
          expert[step.index] = expert_stage(layer, step.index, m, combine_grad[step.index], true);
          break;
        case Step::Dispatch: {
          dispatch_grad[step.index] = a2a() ? alltoall(fmt::format("bwd L{} dispatch m{}", layer, step.index), m,
                                                       &cost::MoeLayerSizes::dispatch_bytes, Phase::Backward, layer, i,
                                                       {expert[step.index]})
                                            : expert[step.index];
          break;
        }
        case Step::Attention: {
          const std::size_t k = step.index;
          std::vector<sched::RankTasks> deps;
          for (std::size_t j = covering_[k].first; j <= covering_[k].second; ++j) deps.push_back(dispatch_grad[j]);
          const sched::RankTasks g = fb_.compute(
              fmt::format("bwd L{} gate s{}", layer, k), OpClass::Gemm, p_.gate_flops(as_double(attention_[k]), true),
              Phase::Backward, layer, i, deps, fb_.work([&] { return p_.gate_work(as_double(attention_[k]), true); }));
          // Slice k's keys and values collect gradients from every later slice first.
          last = attention_slice(layer, k, as_double(attention_[k]), as_double(context[k]), {g}, later_attention, true);
          later_attention = last_attention_;
          break;
        }
      }
    }
    return *last;
  }

  // A block without experts: attention and the dense FFN, each with its TP
  // collectives, unsliced. Forward or backward.
  sched::RankTasks dense(std::int32_t layer, const std::optional<sched::RankTasks>& entry, bool backward) {
    const Phase ph = backward ? Phase::Backward : Phase::Forward;
    const char* dir = backward ? "bwd" : "fwd";
    const model::ParallelSpec& par = s_.parallel;
    const double L = as_double(s_.workload.seq_len);
    auto ffn = [&](const std::optional<sched::RankTasks>& in) {
      std::vector<sched::RankTasks> deps = after(in);
      const double bytes = p_.activation_bytes(L);
      if (par.tp > 1 && par.sequence_parallel)
        deps = {fb_.collective(fmt::format("{} L{} ffn-ag", dir, layer), OpClass::AllGather, fb_.intra(), p_.tp_group,
                               groups().tp, bytes, ph, layer, 0, deps)};
      sched::RankTasks out =
          fb_.compute(fmt::format("{} L{} ffn", dir, layer), OpClass::Gemm, p_.dense_ffn_flops(L, backward), ph, layer,
                      0, deps, fb_.work([&] { return p_.dense_ffn_work(L, backward); }));
      if (par.tp > 1)
        out = fb_.collective(fmt::format("{} L{} ffn-{}", dir, layer, par.sequence_parallel ? "rs" : "ar"),
                             par.sequence_parallel ? OpClass::ReduceScatter : OpClass::AllReduce, fb_.intra(),
                             p_.tp_group, groups().tp, bytes, ph, layer, 0, {out});
      return out;
    };
    if (!backward) return ffn(attention_slice(layer, 0, L, L, after(entry), std::nullopt, false));
    return attention_slice(layer, 0, L, L, {ffn(entry)}, std::nullopt, true);
  }

  // Gradient all-reduce after the backward pass: dense weights over DP, expert
  // weights over EDP, one collective per block (per group in multi-rank mode)
  // from the last block back.
  void gradient_allreduce(const sched::RankTasks& end_of_backward) {
    const model::ParallelSpec& par = s_.parallel;
    const model::ModelSpec& m = s_.model;
    std::optional<sched::RankTasks> previous;
    for (std::int32_t layer = static_cast<std::int32_t>(m.num_layers) - 1; layer >= 0; --layer) {
      const bool moe = m.moe_layer[static_cast<std::size_t>(layer)];
      double dense_bytes = model::attention_params_per_rank(m, par.tp);
      dense_bytes +=
          moe ? as_double(m.d_model * m.moe.num_experts)
              : as_double(model::ffn_params(m.d_model, m.ffn_hidden, m.ffn_type, m.linear_bias)) / as_double(par.tp);
      dense_bytes *= as_double(m.dtype_bytes);
      if (par.dp > 1)
        previous = fb_.collective(fmt::format("grad-ar L{} dense", layer), OpClass::AllReduce, fb_.comm(),
                                  p_.dp_group, groups().dp, dense_bytes, Phase::Backward, layer, -1,
                                  {previous ? *previous : end_of_backward});
      if (moe && par.edp > 1)
        previous = fb_.collective(fmt::format("grad-ar L{} experts", layer), OpClass::AllReduce, fb_.comm(),
                                  p_.edp_group, groups().edp, cost::expert_gradient_bytes_per_block(m, par),
                                  Phase::Backward, layer, -1, {previous ? *previous : end_of_backward});
    }
  }

  const model::ScenarioSpec& s_;
  const Pricing& p_;
  FoldBuilder fb_;
  Kind kind_;
  std::int64_t degree_;
  bool multi_rank_;
  std::vector<std::int64_t> attention_, moe_;
  std::vector<std::size_t> ready_after_;
  std::vector<std::pair<std::size_t, std::size_t>> covering_;
  std::vector<Step> program_;
  sched::RankTasks last_attention_;
};

}  // namespace

const std::vector<std::string>& foldmoe_schedules() { return rules().schedules(); }

sched::BuiltSchedule build_foldmoe(const model::ScenarioSpec& s, const cost::CostModel& costs, const sched::ScheduleKnobs& knobs) {
  const Kind kind = kind_of(knobs.schedule);
  std::int64_t degree = knobs.degree;
  if (!knobs.slicing_tokens.empty()) {
    if (kind != Kind::Aaam && kind != Kind::OneAOneM)
      throw Error(ErrorKind::Input,
                  fmt::format("slicing fixes the attention slices of aaam and 1a1m; schedule '{}' {}", knobs.schedule,
                              kind == Kind::OneAOneMUniform ? "chooses its own (Algorithm 1)" : "does not slice"),
                  "schedule.slicing");
    std::int64_t sum = 0;
    for (std::int64_t t : knobs.slicing_tokens) {
      if (t < 1)
        throw Error(ErrorKind::Input, fmt::format("slices must hold at least 1 token, got {}", t), "schedule.slicing");
      sum += t;
    }
    if (sum != s.workload.seq_len)
      throw Error(ErrorKind::Input,
                  fmt::format("the {} slices hold {} tokens; the sequence has {}", knobs.slicing_tokens.size(), sum,
                              s.workload.seq_len),
                  "schedule.slicing");
    degree = static_cast<std::int64_t>(knobs.slicing_tokens.size());
  }
  // Each MoE micro-batch needs at least one token on each rank.
  const std::int64_t max_degree = s.workload.seq_len / (s.parallel.sequence_parallel ? s.parallel.tp : 1);
  if (kind != Kind::None && (degree < 1 || degree > max_degree))
    throw Error(ErrorKind::Input,
                fmt::format("degree {} is outside 1..{} (tokens per rank of one sequence)", degree, max_degree),
                "schedule.degree");
  const sched::RankLayout layout = sched::rank_layout(s, knobs.multi_rank, "FoldMoE");
  const Pricing pricing(s, costs, layout);
  sched::BuiltSchedule out =
      IterationBuilder(s, pricing, layout, kind, degree, knobs.slicing_tokens, knobs.multi_rank, knobs.record_work)
          .build(knobs.schedule);
  out.overlap_compute_slowdown = costs.overlap_compute_slowdown();
  out.overlap_comm_slowdown = costs.overlap_comm_slowdown();
  return out;
}

}  // namespace moeplan::foldmoe
