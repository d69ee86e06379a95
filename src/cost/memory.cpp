#include <moeplan/cost/memory.hpp>

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

#include <moeplan/model/model_stats.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::cost {
namespace {


// A dense block's FFN weights, split over tp as Megatron-Core's MLP is.
double dense_ffn_params(const model::ModelSpec& m) {
  return as_double(model::ffn_params(m.d_model, m.ffn_hidden, m.ffn_type, m.linear_bias));
}

// One GPU's share of each kind of a block's weights.
struct BlockParts {
  double attention = 0;  ///< attention weights and biases, split over tp
  double norms = 0;      ///< the block's two norms, whole
  double router = 0;     ///< the gate (and the shared experts' gate), whole
  double shared = 0;     ///< shared experts, split over tp
  double experts = 0;    ///< routed experts of this rank: E / ep of them, each split over etp
  double dense_ffn = 0;  ///< a dense block's FFN, split over tp (0 without dense blocks)
};

BlockParts block_parts(const model::ModelSpec& m, const MappingConfig& c) {
  const double d = as_double(m.d_model);
  // Megatron-Core TP splits the attention and shared-expert weights (and the
  // Q, K, V biases) over tp; norms, the router and MLA's down-projections stay
  // whole on every TP rank (their gradients are all-reduced over tp under
  // sequence parallelism).
  BlockParts p;
  p.attention = model::attention_params_per_rank(m, c.tp);
  p.norms = 2.0 * as_double(model::norm_params(m));
  p.router = d * as_double(m.moe.num_experts) + (m.moe.shared_expert_gate ? d : 0.0);
  p.shared =
      as_double(m.moe.num_shared_experts) *
      as_double(model::ffn_params(m.d_model, m.moe.shared_expert_ffn_hidden, m.moe.expert_type, m.linear_bias)) /
      as_double(c.tp);
  const double expert =
      as_double(model::ffn_params(m.d_model, m.moe.expert_ffn_hidden, m.moe.expert_type, m.linear_bias));
  p.experts = as_double(m.moe.num_experts) / as_double(c.ep) * expert / as_double(c.etp);
  p.dense_ffn = has_dense_blocks(m) ? dense_ffn_params(m) / as_double(c.tp) : 0.0;
  return p;
}

// What one GPU of pipeline stage `stage` holds: its blocks (MoE blocks:
// attention, norms, router, shared and routed experts; dense blocks: attention,
// norms and the dense FFN), plus, with `ends`, the word embedding (first stage)
// or the LM head and final norm (last stage), both when pp = 1.
HeldParams stage_held_params(const model::ModelSpec& m, const MappingConfig& c, std::int64_t stage, bool ends) {
  const double d = as_double(m.d_model);
  const BlockParts parts = block_parts(m, c);
  const double attention = parts.attention, norms = parts.norms, router = parts.router, shared = parts.shared,
               dense_ffn = parts.dense_ffn;
  // The first stage holds the word embedding (vocabulary split over tp) and any
  // learned positions; the last the LM head (a copy of the word embedding when
  // tied) and the final norm. With pp = 1 one stage holds both.
  const double words = as_double(m.vocab_size) * d / as_double(c.tp);
  const double first = words + as_double(m.max_position_embeddings) * d;
  const double last = words + as_double(model::norm_params(m));
  double end_params = 0;
  if (ends) {
    if (c.pp == 1)
      end_params = (m.tie_embeddings ? first : first + words) + as_double(model::norm_params(m));
    else if (stage == 0)
      end_params = first;
    else if (stage == c.pp - 1)
      end_params = last;
  }
  const StageBlocks n = stage_blocks(m, c, stage);
  HeldParams here;
  here.dense = n.moe * (attention + norms + router + shared) + n.dense * (attention + norms + dense_ffn) + end_params;
  here.expert = n.moe * parts.experts;
  // The last stage's multi-token prediction modules (an end: Megatron-Core
  // places them with the loss): each its three norms, the 2d x d projection
  // (split over tp) and one block, the model's MoE block when it has one.
  double mtp_linear = 0;
  if (ends && stage == c.pp - 1 && m.mtp_num_layers > 0) {
    const double k = as_double(m.mtp_num_layers);
    const double projection = 2.0 * d * d / as_double(c.tp);
    const bool moe_block = !m.is_dense();
    here.dense += k * (3.0 * as_double(model::norm_params(m)) + projection + attention + norms +
                       (moe_block ? router + shared : dense_ffn));
    here.expert += moe_block ? k * parts.experts : 0.0;
    const model::AttentionParams att_w = model::attention_matmul_weights(m);
    mtp_linear = k * (projection + as_double(att_w.split) / as_double(c.tp) + as_double(att_w.replicated) +
                      (moe_block ? shared + parts.experts : dense_ffn));
  }
  // The linear layers' weights: the attention GEMMs' (down-projections whole,
  // the rest split over tp; biases left out), FFNs and experts.
  const model::AttentionParams att = model::attention_matmul_weights(m);
  const double attention_linear = as_double(att.split) / as_double(c.tp) + as_double(att.replicated);
  here.linear = (n.moe + n.dense) * attention_linear + n.moe * shared + n.dense * dense_ffn + n.moe * parts.experts +
                mtp_linear;
  return here;
}

// What stage `stage` holds of the pipeline's ends (embedding; LM head and
// final norm): its parameters with the ends less those without.
HeldParams stage_end_params(const model::ModelSpec& m, const MappingConfig& c, std::int64_t stage) {
  const HeldParams whole = stage_held_params(m, c, stage, true);
  const HeldParams blocks = stage_held_params(m, c, stage, false);
  HeldParams ends;
  ends.dense = whole.dense - blocks.dense;
  ends.expert = whole.expert - blocks.expert;
  return ends;
}

// The stage that holds the most parameters stands for the pipeline.
HeldParams largest_stage(const model::ModelSpec& m, const MappingConfig& c, bool ends) {
  HeldParams h;
  for (std::int64_t stage = 0; stage < c.pp; ++stage) {
    const HeldParams here = stage_held_params(m, c, stage, ends);
    if (stage == 0 || here.dense + here.expert > h.dense + h.expert) h = here;
  }
  return h;
}

// Megatron-FSDP's working set (docs/cost-model.md, "FSDP"): what a GPU holds
// whole of the blocks beside their shards. The largest block of the stage
// stands for each: the one being computed and the next one prefetched, in
// the weights' dtype ("two consecutive FSDP instances": the PyTorch FSDP
// documentation of limit_all_gathers), and one block's fp32 gradient before
// its ReduceScatter (FSDP reduce-scatters each unit's gradient after the
// unit's backward: PyTorch FSDP2's documentation of fully_shard). A group of one
// rank shards nothing and gathers nothing: that part is not counted.
double fsdp_working_set(const model::ModelSpec& m, const MappingConfig& c, double grad_bytes) {
  double largest = 0;
  for (const bool moe : {true, false}) {
    const HeldParams block = block_params(m, c, moe);
    const double gathered = (c.dp * c.cp > 1 ? block.dense : 0.0) + (c.edp > 1 ? block.expert : 0.0);
    largest = std::max(largest, gathered);
  }
  return largest * (2.0 * as_double(m.dtype_bytes) + grad_bytes);
}

// The weights, gradients and optimizer state one GPU holds. `g`: each gradient
// as kept for the step; `reduced_g`: as reduced (the FSDP working set's
// unsharded gradient before its ReduceScatter).
double model_state_bytes(const model::ModelSpec& m, const MappingConfig& c, bool fully_sharded, double g,
                         double reduced_g, double k) {
  const HeldParams held = held_params(m, c);
  const double b = as_double(m.dtype_bytes);
  const double dense_group = as_double(c.dp * c.cp), expert_group = as_double(c.edp);
  // The distributed optimizer (ZeRO-1): bf16 weights (2 B) and main gradients
  // (g: fp32 4 B, bf16 2 B under grad_reduce_in_bf16) per parameter held; the
  // optimizer state (k: fp32 master weights and Adam moments, 12 B; 10 or 6
  // under the precision-aware optimizer, model::optimizer_state_bytes) sharded
  // over the groups that reduce them: dp x cp (dense) and edp (experts).
  // Without master weights (model::ScheduleSpec::master_weights none, FSDP
  // only) k holds the moments alone and g is the weights' 2 B: Megatron-FSDP's
  // main grads "auto", PyTorch FSDP2's sharded gradient in the parameter's dtype.
  const auto zero1 = [&](const HeldParams& h) {
    return (h.dense + h.expert) * (b + g) + h.dense * k / dense_group + h.expert * k / expert_group;
  };
  if (!fully_sharded) return zero1(held);
  // Megatron-FSDP (optim_grads_params, ZeRO-3: Rajbhandari et al. 2020,
  // section 5 and Figure 1, P_os+g+p, (2 + 2 + K) Psi / N_d with K = 12): the
  // blocks' weights and gradients are sharded over the same groups as their
  // optimizer state, (b + 4 + 12) / group per parameter (Megatron's fp32
  // main gradients: 4 B, not ZeRO's 2). The ends (embedding; LM head and final norm) are not FSDP
  // units (Megatron-FSDP's default unit is the TransformerLayer,
  // mcore_fsdp_adapter.py): they stay as the distributed optimizer keeps them.
  // Each stage's own blocks and ends; the stage that needs the most counts.
  double most = 0;
  for (std::int64_t stage = 0; stage < c.pp; ++stage) {
    const HeldParams blocks = stage_held_params(m, c, stage, false);
    const HeldParams ends = stage_end_params(m, c, stage);
    most = std::max(most, zero1(ends) + blocks.dense * (b + g + k) / dense_group +
                              blocks.expert * (b + g + k) / expert_group);
  }
  return most + fsdp_working_set(m, c, reduced_g);
}

}  // namespace

// Transformer Engine's cached dummy weight gradients (memory.hpp). Under Megatron-Core's
// fused gradient accumulation a TE linear layer adds its weight gradient into
// main_grad itself and hands autograd a dummy weight-shaped tensor; since TE
// v2.3 (NVIDIA/TransformerEngine#1651, 2025-04: module/base.py get_dummy_wgrad,
// called from linear.py, layernorm_linear.py and grouped_linear.py) that tensor
// is cached, one per distinct (shape, dtype), for the life of the process. So a
// rank holds, from its first backward pass on, one weight-sized tensor (b bytes
// an element) per distinct shape among the TE linear layers of its stage:
// attention's (QKV and output projection, or MLA's down-, up- and output
// projections), a dense block's two MLP matrices, one routed expert's two (every
// expert has the same shape) and the shared experts' two. Not the router, the
// embedding or the LM head (not TE modules), nor multi-token prediction's
// projection (left out: one d x 2d / tp tensor on the last stage).
double dummy_wgrad_bytes(const model::ModelSpec& m, const MappingConfig& c, bool moe_blocks, bool dense_blocks) {
  const std::int64_t d = m.d_model, tp = c.tp;
  std::set<std::pair<std::int64_t, std::int64_t>> shapes;  // (output features on the rank, input features)
  const std::int64_t h = m.num_heads, g = m.num_kv_heads;
  if (m.mla) {
    const model::MlaSpec& a = *m.mla;
    const std::int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank) {
      shapes.insert({*a.q_lora_rank, d});
      shapes.insert({h * qk / tp, *a.q_lora_rank});
    } else {
      shapes.insert({h * qk / tp, d});
    }
    shapes.insert({a.kv_lora_rank + a.qk_rope_head_dim, d});
    shapes.insert({h * (a.qk_nope_head_dim + a.v_head_dim) / tp, a.kv_lora_rank});
    shapes.insert({d, h * a.v_head_dim / tp});
  } else {
    shapes.insert({(h + 2 * g) * m.head_dim / tp, d});
    shapes.insert({d, h * m.head_dim / tp});
  }
  // Gated FFNs (SwiGLU) stack gate and up in one first matrix.
  const auto ffn = [&](std::int64_t hidden, model::FfnType type, std::int64_t split) {
    shapes.insert({(type == model::FfnType::SwiGlu ? 2 : 1) * hidden / split, d});
    shapes.insert({d, hidden / split});
  };
  if (dense_blocks) ffn(m.ffn_hidden, m.ffn_type, tp);
  if (moe_blocks) {
    ffn(m.moe.expert_ffn_hidden, m.moe.expert_type, c.etp);
    if (m.moe.num_shared_experts > 0)
      ffn(m.moe.num_shared_experts * m.moe.shared_expert_ffn_hidden, m.moe.expert_type, tp);
  }
  double elements = 0;
  for (const auto& [rows, cols] : shapes) elements += as_double(rows) * as_double(cols);
  return elements * as_double(m.dtype_bytes);
}

HeldParams block_params(const model::ModelSpec& m, const MappingConfig& c, bool moe) {
  const BlockParts p = block_parts(m, c);
  HeldParams out;
  if (moe && !m.is_dense()) {
    out.dense = p.attention + p.norms + p.router + p.shared;
    out.expert = p.experts;
  } else if (!moe && has_dense_blocks(m)) {
    out.dense = p.attention + p.norms + p.dense_ffn;
  }
  return out;
}

HeldParams held_params_of_layers(const model::ModelSpec& m, const MappingConfig& c) {
  return largest_stage(m, c, false);
}

HeldParams held_params(const model::ModelSpec& m, const MappingConfig& c) { return largest_stage(m, c, true); }

HeldParams held_params_of_ends(const model::ModelSpec& m, const MappingConfig& c) {
  HeldParams most;
  for (std::int64_t stage = 0; stage < c.pp; ++stage) {
    const HeldParams ends = stage_end_params(m, c, stage);
    if (ends.dense + ends.expert > most.dense + most.expert) most = ends;
  }
  return most;
}

double params_per_gpu(const model::ModelSpec& m, const MappingConfig& c) {
  const HeldParams h = held_params(m, c);
  return h.dense + h.expert;
}

MemorySettings MemorySettings::of(const model::ScenarioSpec& s) {
  MemorySettings out;
  out.recompute = s.schedule.recompute;
  out.attention_backend = s.schedule.attention_backend;
  out.fully_sharded = model::fully_sharded(s.schedule);
  out.main_grad_bytes = model::main_grad_bytes(s.schedule);
  out.kept_grad_bytes = model::kept_grad_bytes(s.schedule);
  out.optimizer_state_bytes = model::optimizer_state_bytes(s.schedule);
  out.fused_cross_entropy = s.schedule.fused_cross_entropy();
  out.cp_comm_type = s.parallel.cp_comm_type;
  out.fused_grouped_mlp = s.schedule.fused_grouped_mlp;
  return out;
}

double memory_per_gpu(const model::ModelSpec& m, const model::WorkloadSpec& w, const MemorySettings& settings,
                      const MappingConfig& c) {
  const model::RecomputeSpec& recompute = settings.recompute;
  const std::string& attention_backend = settings.attention_backend;
  const bool fully_sharded = settings.fully_sharded;
  const bool fused_cross_entropy = settings.fused_cross_entropy;
  const HeldParams held = held_params(m, c);
  const double b = as_double(m.dtype_bytes);
  const double d = as_double(m.d_model);
  const double seq = as_double(w.seq_len);
  const double tokens_local = as_double(c.micro_batch) * seq / as_double(c.cp);
  const std::int64_t micro_batches = w.global_batch_size / (c.micro_batch * c.dp);
  double bytes = model_state_bytes(m, c, fully_sharded, settings.kept_grad_bytes, settings.main_grad_bytes,
                                   settings.optimizer_state_bytes);
  // Transformer Engine's cached dummy weight gradients (dummy_wgrad_bytes), for
  // the stage whose layers need the most. Not under Megatron-FSDP, whose user
  // guide turns the fused accumulation off (--no-gradient-accumulation-fusion,
  // as `plan --emit megatron` writes): no dummy is made.
  if (!fully_sharded) {
    double dummies = 0;
    for (std::int64_t stage = 0; stage < c.pp; ++stage) {
      const StageBlocks n = stage_blocks(m, c, stage);
      dummies = std::max(dummies, dummy_wgrad_bytes(m, c, n.moe > 0, n.dense > 0));
    }
    bytes += dummies;
  }
  // FP8 recipes keep each linear weight's FP8 copies between micro-batches
  // (Transformer Engine caches them after the first): a row-wise and a
  // column-wise byte per weight (fp8_casts.hpp).
  const bool fp8 = model::is_fp8(w.precision);
  if (fp8) bytes += held.linear * 2.0;
  // Activations (Korthikanti et al. 2023, selective recompute, flash attention):
  // 34 s b h bytes per layer at 2-byte elements, / (tp x cp); the MoE part
  // scales with the tokens the experts see (top-k x capacity) and their width.
  // Shared experts are MLPs on every token, split over tp like attention.
  const double dense_part = 34.0 * tokens_local * d / as_double(c.tp) * (b / 2.0);
  const double mlp_share = 19.0 / 34.0;  // of the 34: the 4h MLP's share (Korthikanti Table 2)
  // The rest, 15/34: attention 11 (QKV input 2, Q and K 4, V 2, projection
  // input 2, dropout mask 1, in units of s b h) and two LayerNorm inputs 4.
  // MLA stores Q and K of h x qk and V and the projection input of h x v per
  // token (split over tp by heads), and its latents whole: the q and kv
  // latents, each as a norm input and an up-projection input (gathered over
  // tp, multi_latent_attention.py), 4 (q_lora + kv_lora) bytes per token at
  // 2-byte elements.
  double attention_share = 1.0 - mlp_share;
  double latent_bytes = 0;
  // FP8 (Transformer Engine saves a linear layer's FP8 input for its weight
  // gradient, 1 B instead of 2): the QKV and projection inputs (2 + 2 of the
  // 15) drop by half, and in the MLP the inputs of its two GEMMs (2 + 8 of the 19).
  double fp8_mlp_keep = 1.0;
  if (fp8) {
    attention_share -= 2.0 / 34.0;
    fp8_mlp_keep = (19.0 - 5.0) / 19.0;
  }
  if (m.mla) {
    const double heads = as_double(m.num_heads);
    attention_share = (7.0 * d + 4.0 * heads * as_double(m.head_dim + m.value_head_dim())) / (34.0 * d);
    // Under FP8 the output projection's input (2 heads v) halves, and so does
    // each latent's up-projection input. The down-projections' shared input
    // does not: the q and kv down-projections are two linear layers, each
    // saving its own FP8 copy (2 x 1 B, as much as the one BF16 tensor both kept).
    if (fp8) attention_share -= heads * as_double(m.value_head_dim()) / (34.0 * d);
    latent_bytes = (fp8 ? 3.0 : 4.0) * as_double(m.mla->q_lora_rank.value_or(0) + m.mla->kv_lora_rank) *
                   tokens_local * (b / 2.0);
  }
  const double moe_scale = as_double(m.moe.top_k) * m.moe.capacity_factor.value_or(1.0) *
                           as_double(m.moe.expert_ffn_hidden) / (4.0 * d) * as_double(c.tp) / as_double(c.etp);
  const double shared_scale = as_double(m.moe.num_shared_experts * m.moe.shared_expert_ffn_hidden) / (4.0 * d);
  // A dense block's MLP: its hidden over the 4h of the 34, split over tp like attention.
  const double dense_scale = as_double(m.ffn_hidden) / (4.0 * d);
  // In Korthikanti's units (one s b h / tp at 2-byte elements) per block:
  // the attention part (norm inputs included), an MoE block's routed and
  // shared experts, a dense block's MLP. An MoE block also keeps its pre-MLP
  // norm's output (2 units), which the router's GEMM and the token
  // permutation read (Korthikanti's table counts it inside the MLP's 19 as
  // the first GEMM's input; the routed experts' inputs are the permuted copies).
  const double unit = dense_part / 34.0;
  double attention_units = attention_share * 34.0;
  double moe_input_units = 2.0;
  double routed_units = 19.0 * fp8_mlp_keep * moe_scale;
  double shared_units = 19.0 * fp8_mlp_keep * shared_scale;
  double dense_mlp_units = 19.0 * fp8_mlp_keep * dense_scale;
  // Selective recomputation (Megatron-Core's --recompute-modules; docs/cost-model.md,
  // "Recomputation"): what each recomputed submodule no longer keeps.
  const auto recomputed = [&](const char* module) { return model::recomputes_module(recompute, module); };
  if (recomputed("layernorm")) {
    // Output-discarding: the outputs of the norms that are modules of their
    // own: the pre-MLP norm of an MoE block (the router reads it), and MLA's
    // input norm (its down-projections read it). Transformer Engine fuses
    // the other norms into the next linear layer, which keeps their output.
    moe_input_units = 0;
    if (m.mla) attention_units -= 2.0;
  }
  // moe_act: the routed experts' activation output (the second GEMM's input,
  // 8 of the 19; 4 when FP8 saves it in one byte).
  if (recomputed("moe_act")) routed_units -= (fp8 ? 4.0 : 8.0) * moe_scale;
  // A clamped GLU (GPT-OSS, glu_clamp_bytes): the two torch clamps keep their
  // inputs, the first GEMM's output halves (2 f per slot; an f-wide bf16
  // tensor is 8 units x moe_scale, so 16), beside the concatenation the activation keeps.
  // Freed when moe_act is recomputed (the clamps run inside the checkpoint),
  // and absent under the fused grouped MLP.
  if (m.moe.glu_clamp > 0 && !settings.fused_grouped_mlp && !recomputed("moe_act")) routed_units += 16.0 * moe_scale;
  // mla_up_proj: the up-projected Q and K (h x qk each) and V (h x v), which
  // the attention core would keep; its output (the projection's input) stays.
  if (recomputed("mla_up_proj")) {
    const double heads = as_double(m.num_heads);
    attention_units -= (4.0 * heads * as_double(m.head_dim) + 2.0 * heads * as_double(m.value_head_dim())) / d;
  }
  // Context parallelism over AlltoAll: Transformer Engine's a2a attention
  // (AttnFuncWithCPAndQKVOA2A in attention/dot_product_attention/
  // context_parallel.py saves q_part, k_part, v_part and out_part) keeps the
  // core's output in its heads-split layout for the core's backward, beside
  // the sequence-split copy the output projection keeps as its input: one
  // more h v per token, 2 h v / d units (split over tp, as the rest). Not when
  // the core is recomputed.
  const bool cp_a2a = settings.cp_comm_type == "a2a" || settings.cp_comm_type == "a2a+p2p";
  if (c.cp > 1 && cp_a2a && !recomputed("core_attn"))
    attention_units += 2.0 * as_double(m.num_heads * m.value_head_dim()) / d;
  // Normal checkpointing keeps the submodule's input only: the MLP's and the
  // MoE layer's is the pre-MLP norm's output (counted above for MoE blocks).
  if (recomputed("mlp")) dense_mlp_units = 2.0;
  if (recomputed("shared_experts")) shared_units = 0;
  if (recomputed("moe")) routed_units = shared_units = 0;
  double per_layer = unit * (attention_units + moe_input_units + routed_units + shared_units) + latent_bytes;
  double per_dense_layer = unit * (attention_units + dense_mlp_units) + latent_bytes;
  // Without flash attention, a layer whose attention core is not recomputed
  // also stores its scores, softmax and dropout mask (Korthikanti et al.
  // 2023), 5 a s^2 b bytes (2 + 2 + 1 bytes per score at 2-byte elements),
  // the heads split over tp and the queries over cp; flash attention stores
  // none of them (only its O(s) softmax statistics), which is what every
  // current training stack runs: the default.
  if (attention_backend == "unfused" && recompute.granularity != "full" && !recomputed("core_attn")) {
    const double scores = 5.0 * as_double(m.num_heads) / as_double(c.tp) * as_double(c.micro_batch) *
                          (seq / as_double(c.cp)) * seq * (b / 2.0);
    per_layer += scores;
    per_dense_layer += scores;
  }
  const double full_layer = has_dense_blocks(m) ? std::max(per_layer, per_dense_layer) : per_layer;
  // Full recomputation keeps a recomputed block's input only (2 s b h / tp).
  // Uniform: each model chunk's blocks in groups of num_layers, one input per
  // group; block: the first num_layers blocks of each chunk, the others keep
  // everything. A stage's blocks are priced at its mean block.
  const bool full = recompute.granularity == "full";
  const double layer_input = 2.0 * unit;
  const std::vector<std::int64_t> chunks = chunk_layer_counts(m, c);
  std::int64_t largest_group = 0;  // the blocks recomputed at once
  // 1F1B keeps pp - r micro-batches in flight on stage r (pp on the first);
  // interleaving adds (pp - 1) / (pp vpp). The stage holding the most counts.
  double activations = 0;
  for (std::int64_t stage = 0; stage < c.pp; ++stage) {
    const double in_flight =
        std::min(as_double(c.pp - stage), as_double(micro_batches)) *
        (c.vpp > 1 ? 1.0 + (as_double(c.pp) - 1.0) / (as_double(c.pp) * as_double(c.vpp)) : 1.0);
    const StageBlocks n = stage_blocks(m, c, stage);
    double kept = per_layer * n.moe + per_dense_layer * n.dense;
    if (full && n.moe + n.dense > 0) {
      const double mean_block = kept / (n.moe + n.dense);
      kept = 0;
      for (std::int64_t v = 0; v < c.vpp; ++v) {
        const std::int64_t blocks = chunks[static_cast<std::size_t>(v * c.pp + stage)];
        if (recompute.method == "uniform") {
          const std::int64_t group = std::min(recompute.num_layers, blocks);
          if (group > 0) kept += as_double((blocks + group - 1) / group) * layer_input;
          largest_group = std::max(largest_group, group);
        } else {
          const std::int64_t recomputed_blocks = std::min(recompute.num_layers, blocks);
          kept += as_double(recomputed_blocks) * layer_input + as_double(blocks - recomputed_blocks) * mean_block;
          largest_group = std::max<std::int64_t>(largest_group, recomputed_blocks > 0 ? 1 : 0);
        }
      }
    }
    // The last stage's multi-token prediction blocks keep a block's activations
    // each (moeplan's recomputation options act on the decoder's blocks only).
    if (stage == c.pp - 1)
      kept += as_double(m.mtp_num_layers) * (m.is_dense() ? per_dense_layer : per_layer);
    // The last stage also holds, while one micro-batch's loss runs, its
    // logits (tokens x vocab / tp at b bytes) and the fp32 copy the
    // cross-entropy turns into the softmax it keeps for the backward
    // (Megatron-Core's vocab_parallel_cross_entropy: 4 B each). Transformer
    // Engine's fused loss writes the gradient into the logits themselves and
    // keeps 3 fp32 per token (16 with the loss, O(tokens): left out).
    const double logit_bytes = fused_cross_entropy ? b : b + 4.0;
    const double logits =
        stage == c.pp - 1 ? logit_bytes * tokens_local * as_double(m.vocab_size) / as_double(c.tp) : 0.0;
    activations = std::max(activations, kept * in_flight + logits);
  }
  bytes += activations;
  // The group being recomputed holds all its activations once, during its backward.
  if (full) bytes += as_double(largest_group) * full_layer;
  return bytes;
}

double usable_memory_bytes(const model::GpuSpec& gpu, const MemoryModel& mem) {
  return std::max(0.0, gpu.memory_bytes - mem.context_bytes) / (1.0 + mem.allocator_overhead);
}

bool fits_in_memory(const model::GpuSpec& gpu, double bytes, const MemoryModel& mem) {
  return bytes <= usable_memory_bytes(gpu, mem);
}

std::string tight_memory_clause(const model::GpuSpec& gpu, double bytes, const MemoryModel& mem) {
  if (!tight_in_memory(gpu, bytes, mem)) return "";
  return fmt::format("; its {:.1f} GiB per GPU is within {:.1f}% of the {:.1f} GiB usable, the memory model's "
                     "largest under-prediction of a measured peak: it may not fit",
                     bytes / kGiB, 100 * mem.largest_underprediction, usable_memory_bytes(gpu, mem) / kGiB);
}

bool tight_in_memory(const model::GpuSpec& gpu, double bytes, const MemoryModel& mem) {
  // Under-predicted by u of the measured peak, the peak is bytes / (1 - u).
  return fits_in_memory(gpu, bytes, mem) &&
         bytes > usable_memory_bytes(gpu, mem) * (1.0 - mem.largest_underprediction);
}

}  // namespace moeplan::cost
