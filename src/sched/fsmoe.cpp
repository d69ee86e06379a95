#include <moeplan/sched/fsmoe.hpp>

#include <cmath>
#include <optional>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/model/model_stats.hpp>

namespace moeplan::sched {
namespace {

using dag::Phase;
using dag::TaskId;
using model::LinkClass;
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

double as_double(std::int64_t v) { return static_cast<double>(v); }

// A2A and the ESP collectives outrank gradient chunks in Lina's pool.
constexpr std::int32_t kMoePriority = 1;
constexpr std::int32_t kGradientPriority = 0;

class Builder {
 public:
  Builder(const model::ScenarioSpec& s, const cost::CostModel& costs, const FsMoeKnobs& k)
      : s_(s), costs_(costs), k_(k), kind_(kind_of(k.schedule)) {
    const model::ParallelSpec& p = s.parallel;
    const std::int64_t gpn = s.cluster.gpus_per_node;
    tp_link_ = group_link(p.tp, 1, gpn);
    etp_link_ = group_link(p.etp, 1, gpn);
    ep_link_ = group_link(p.ep, p.etp, gpn);
    dp_link_ = group_link(p.dp, p.tp * p.cp, gpn);
    compute_ = b_.add_resource({"compute", 0, dag::DispatchPolicy::InOrder});
    // Tutel, Lina and no-IIO keep one communication stream; FSMoE splits intra and inter.
    const bool split = kind_ == Kind::FsMoe;
    inter_ = b_.add_resource({split ? "inter" : "comm", 0,
                              kind_ == Kind::Lina ? dag::DispatchPolicy::Priority : dag::DispatchPolicy::InOrder});
    intra_ = split ? b_.add_resource({"intra", 0, dag::DispatchPolicy::InOrder}) : inter_;
    moe_ = cost::moe_layer_sizes(s.model, p, s.workload);
    attention_ = cost::attention_layer_sizes(s.model, p, s.workload);
  }

  BuiltSchedule build() {
    const std::int64_t r_f = kind_ == Kind::None ? 1 : k_.degree_forward;
    const std::int64_t r_b = kind_ == Kind::None ? 1 : k_.degree_backward;
    const std::int32_t layers = static_cast<std::int32_t>(s_.model.num_layers);
    std::optional<TaskId> last;
    pending_gradients_ = 0;
    if (k_.single_layer_only) {
      const double t_gar_bytes = k_.grad_during_moe_bytes.empty() ? 0.0 : k_.grad_during_moe_bytes.front();
      last = moe_layer(0, std::nullopt, k_.backward_only ? r_b : r_f, k_.backward_only,
                       k_.backward_only ? t_gar_bytes : 0.0);
    } else {
      const std::int64_t batches = s_.workload.micro_batches_per_rank(s_.parallel.dp);
      for (std::int64_t n = 0; n < batches; ++n) {
        const bool last_batch = n + 1 == batches;  // gradients are reduced after the last micro-batch
        for (std::int32_t layer = 0; layer < layers; ++layer) last = forward_layer(layer, last, r_f);
        for (std::int32_t layer = layers - 1; layer >= 0; --layer) {
          const std::size_t i = static_cast<std::size_t>(layer);
          const std::int64_t r =
              kind_ != Kind::None && i < k_.degree_backward_per_layer.size() ? k_.degree_backward_per_layer[i] : r_b;
          last = backward_layer(layer, *last, r, last_batch);
        }
      }
      tail_allreduce(*last);
    }
    BuiltSchedule out{std::move(b_).build(), k_.schedule, kind_ == Kind::None ? 1 : r_f, {}, {}};
    return out;
  }

 private:
  TaskId add(const std::string& name, dag::TaskKind kind, OpClass op, double ms, dag::ResourceId on, std::int64_t group,
             Phase ph, std::int32_t layer, std::int32_t index, std::vector<TaskId> after, std::int32_t priority = 0) {
    return emit_task(b_, {name, ph, layer, index, priority, group}, kind, op, ms, {on}, after);
  }
  double comm_ms(OpClass op, LinkClass link, std::int64_t group, double bytes) const {
    return costs_.communication(op, link, group, bytes).value;
  }
  double compute_ms(OpClass op, double flops) const { return costs_.compute(op, flops).value; }

  // Dense part of a generalized layer: attention with MP (SP collectives on intra) and the gate.
  TaskId dense_part(std::int32_t layer, std::optional<TaskId> entry, bool backward) {
    const Phase ph = backward ? Phase::Backward : Phase::Forward;
    const char* dir = backward ? "bwd" : "fwd";
    const model::ParallelSpec& p = s_.parallel;
    std::vector<TaskId> deps;
    if (entry) deps.push_back(*entry);
    const double factor = backward ? 2.0 : 1.0;
    const double gate_flops = factor * moe_.gating_forward_flops;
    if (backward)
      deps = {add(fmt::format("bwd L{} gate", layer), dag::TaskKind::Compute, OpClass::Gemm,
                  compute_ms(OpClass::Gemm, gate_flops), compute_, 1, ph, layer, 0, deps)};
    if (p.tp > 1 && p.sequence_parallel)
      deps = {add(fmt::format("{} L{} attn-ag", dir, layer), dag::TaskKind::Communication, OpClass::AllGather,
                  comm_ms(OpClass::AllGather, tp_link_, p.tp, attention_.tp_allgather_bytes), intra_, p.tp, ph, layer,
                  0, deps, kMoePriority)};
    TaskId out = add(fmt::format("{} L{} attention", dir, layer), dag::TaskKind::Compute, OpClass::Attention,
                     compute_ms(OpClass::Attention, backward ? attention_.backward_flops : attention_.forward_flops),
                     compute_, 1, ph, layer, 0, deps);
    if (p.tp > 1) {
      const OpClass op = p.sequence_parallel ? OpClass::ReduceScatter : OpClass::AllReduce;
      const double bytes = p.sequence_parallel ? attention_.tp_reducescatter_bytes : attention_.tp_allreduce_bytes;
      out = add(fmt::format("{} L{} attn-{}", dir, layer, p.sequence_parallel ? "rs" : "ar"),
                dag::TaskKind::Communication, op, comm_ms(op, tp_link_, p.tp, bytes), intra_, p.tp, ph, layer, 0, {out},
                kMoePriority);
    }
    if (!backward)
      out = add(fmt::format("fwd L{} gate", layer), dag::TaskKind::Compute, OpClass::Gemm,
                compute_ms(OpClass::Gemm, gate_flops), compute_, 1, ph, layer, 0, {out});
    return out;
  }

  // The MoE part in r chunks (Fig. 3). Forward: D_j -> AG_j -> E_j -> RS_j -> C_j.
  // Backward: the adjoints in the same order (combine-gradient first), 2x experts,
  // with `t_gar_bytes` of Gradient-AllReduce on the inter link between the
  // combines and the dispatches, while the experts and the intra link work.
  TaskId moe_layer(std::int32_t layer, std::optional<TaskId> entry, std::int64_t r, bool backward,
                   double t_gar_bytes = 0) {
    const Phase ph = backward ? Phase::Backward : Phase::Forward;
    const char* dir = backward ? "bwd" : "fwd";
    const model::ParallelSpec& p = s_.parallel;
    const double rr = as_double(r);
    const double a2a_bytes = moe_.dispatch_bytes / rr;
    const double esp_bytes = moe_.etp_allgather_bytes / rr;
    const double expert_flops = (backward ? moe_.expert_backward_flops : moe_.expert_forward_flops) / rr;
    const double a2a = comm_ms(OpClass::A2A, ep_link_, p.ep, a2a_bytes);
    const double ag = comm_ms(OpClass::AllGather, etp_link_, p.etp, esp_bytes);
    const double rs = comm_ms(OpClass::ReduceScatter, etp_link_, p.etp, esp_bytes);
    const double exp =
        cost::expert_ffn_time(costs_, expert_flops, s_.model.moe.expert_type == model::FfnType::GeluFfn ? 2 : 3).value;
    std::vector<TaskId> first, gathered(static_cast<std::size_t>(r)), experts(static_cast<std::size_t>(r)),
        scattered(static_cast<std::size_t>(r));
    if (entry) first.push_back(*entry);
    const char* in_name = backward ? "combine" : "dispatch";
    const char* out_name = backward ? "dispatch" : "combine";
    const bool one_stream = intra_ == inter_;
    std::vector<TaskId> inputs(static_cast<std::size_t>(r));
    auto a2a_in = [&](std::int64_t j) {
      inputs[static_cast<std::size_t>(j)] =
          add(fmt::format("{} L{} {} c{}", dir, layer, in_name, j), dag::TaskKind::Communication, OpClass::A2A, a2a,
              inter_, p.ep, ph, layer, static_cast<std::int32_t>(j), first, kMoePriority);
    };
    auto gather = [&](std::int64_t j) {
      const std::size_t i = static_cast<std::size_t>(j);
      gathered[i] = p.etp > 1 ? add(fmt::format("{} L{} esp-ag c{}", dir, layer, j), dag::TaskKind::Communication,
                                    OpClass::AllGather, ag, intra_, p.etp, ph, layer, static_cast<std::int32_t>(j),
                                    {inputs[i]}, kMoePriority)
                              : inputs[i];
    };
    auto expert = [&](std::int64_t j) {
      const std::size_t i = static_cast<std::size_t>(j);
      experts[i] = add(fmt::format("{} L{} experts c{}", dir, layer, j), dag::TaskKind::Compute, OpClass::Gemm, exp,
                       compute_, 1, ph, layer, static_cast<std::int32_t>(j), {gathered[i]});
    };
    auto scatter = [&](std::int64_t j) {
      const std::size_t i = static_cast<std::size_t>(j);
      scattered[i] = p.etp > 1 ? add(fmt::format("{} L{} esp-rs c{}", dir, layer, j), dag::TaskKind::Communication,
                                     OpClass::ReduceScatter, rs, intra_, p.etp, ph, layer, static_cast<std::int32_t>(j),
                                     {experts[i]}, kMoePriority)
                               : experts[i];
    };
    std::optional<TaskId> last;
    auto a2a_out = [&](std::int64_t j) {
      last = add(fmt::format("{} L{} {} c{}", dir, layer, out_name, j), dag::TaskKind::Communication, OpClass::A2A, a2a,
                 inter_, p.ep, ph, layer, static_cast<std::int32_t>(j), {scattered[static_cast<std::size_t>(j)]},
                 kMoePriority);
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
      if (t_gar_bytes > 0) gradient(layer, t_gar_bytes, "moe", {inputs.back()});
      for (std::int64_t j = 0; j < r; ++j) a2a_out(j);
    }
    if (one_stream && t_gar_bytes > 0) gradient(layer, t_gar_bytes, "moe", {*last});
    return *last;
  }

  // A Gradient-AllReduce of `bytes` over DP on the inter link.
  TaskId gradient(std::int32_t layer, double bytes, const char* where, std::vector<TaskId> after,
                  std::int32_t index = 0) {
    const model::ParallelSpec& p = s_.parallel;
    return add(fmt::format("grad-ar L{} {} {}", layer, where, index), dag::TaskKind::Communication, OpClass::AllReduce,
               comm_ms(OpClass::AllReduce, dp_link_, p.dp, bytes), inter_, p.dp, Phase::Backward, layer, index,
               std::move(after), kGradientPriority);
  }

  TaskId forward_layer(std::int32_t layer, std::optional<TaskId> entry, std::int64_t r) {
    return moe_layer(layer, dense_part(layer, entry, false), r, false);
  }

  TaskId backward_layer(std::int32_t layer, TaskId entry, std::int64_t r, bool reduce) {
    const std::size_t i = static_cast<std::size_t>(layer);
    const double own = reduce ? generalized_layer_gradient_bytes(s_, layer) : 0.0;
    double during_moe = 0, during_dense = 0;
    if (reduce && (kind_ == Kind::FsMoe || kind_ == Kind::FsMoeNoIio)) {
      if (i < k_.grad_during_moe_bytes.size()) during_moe = k_.grad_during_moe_bytes[i];
      if (i < k_.grad_during_dense_bytes.size()) during_dense = k_.grad_during_dense_bytes[i];
    }
    const TaskId moe_done = moe_layer(layer, entry, r, true, during_moe);
    // The dense part's gradient all-reduce runs on the inter link while its attention backward computes.
    if (during_dense > 0) gradient(layer, during_dense, "dense", {moe_done});
    const TaskId dense_done = dense_part(layer, moe_done, true);
    if (!reduce) return dense_done;
    switch (kind_) {
      case Kind::TutelImproved:
        // This layer's gradients overlap the next generalized layer's dense part.
        gradient(layer, own, "layer", {dense_done});
        break;
      case Kind::Lina: {
        // 30 MB chunks into the priority pool, below every AlltoAll.
        const std::int64_t chunks =
            std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(own / kLinaChunkBytes)));
        for (std::int64_t c = 0; c < chunks; ++c)
          gradient(layer, std::min(kLinaChunkBytes, own - as_double(c) * kLinaChunkBytes), "chunk", {dense_done},
                   static_cast<std::int32_t>(c));
        break;
      }
      case Kind::FsMoe:
      case Kind::FsMoeNoIio:
        pending_gradients_ += own - during_moe - during_dense;  // what the partition left for the end
        break;
      default:
        pending_gradients_ += own;
        break;
    }
    return dense_done;
  }

  void tail_allreduce(TaskId end) {
    if (pending_gradients_ > 1e-6) gradient(-1, pending_gradients_, "tail", {end});
  }

  const model::ScenarioSpec& s_;
  const cost::CostModel& costs_;
  const FsMoeKnobs& k_;
  Kind kind_;
  dag::TaskGraphBuilder b_;
  dag::ResourceId compute_, inter_, intra_;
  LinkClass tp_link_, etp_link_, ep_link_, dp_link_;
  cost::MoeLayerSizes moe_;
  cost::AttentionLayerSizes attention_;
  double pending_gradients_ = 0;
};

}  // namespace

const std::vector<std::string>& fsmoe_schedules() {
  static const std::vector<std::string> names{"none",         "tutel",        "tutel-improved",
                                              "pipemoe-lina", "fsmoe-no-iio", "fsmoe"};
  return names;
}

double generalized_layer_gradient_bytes(const model::ScenarioSpec& s, std::int32_t) {
  double bytes = cost::dense_gradient_bytes_per_block(s.model, s.parallel);
  if (s.parallel.edp > 1) bytes += cost::expert_gradient_bytes_per_block(s.model, s.parallel);
  return bytes;
}

BuiltSchedule build_fsmoe(const model::ScenarioSpec& s, const cost::CostModel& costs, const FsMoeKnobs& knobs) {
  for (std::int64_t r : {knobs.degree_forward, knobs.degree_backward})
    if (r < 1 || r > 64) throw Error(ErrorKind::Input, fmt::format("degree {} is outside 1..64", r), "schedule.degree");
  return Builder(s, costs, knobs).build();
}

}  // namespace moeplan::sched
