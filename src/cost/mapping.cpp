#include <moeplan/cost/mapping.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::cost {
namespace {


}  // namespace

model::ParallelSpec MappingConfig::parallel_spec() const {
  model::ParallelSpec p;
  p.tp = tp;
  p.cp = cp;
  p.pp = pp;
  p.vpp = vpp;
  p.ep = ep;
  p.etp = etp;
  p.dp = dp;
  p.edp = edp;
  p.sequence_parallel = true;
  p.stage_layers = chunk_layers;
  return p;
}

MappingConfig MappingConfig::from(const model::ParallelSpec& p, std::int64_t micro_batch) {
  return MappingConfig{p.tp, p.cp, p.pp, p.vpp, p.ep, p.etp, micro_batch, p.dp, p.edp, p.stage_layers};
}

bool same_mapping(const MappingConfig& a, const MappingConfig& b) {
  return a.tp == b.tp && a.cp == b.cp && a.pp == b.pp && a.vpp == b.vpp && a.ep == b.ep && a.etp == b.etp &&
         a.micro_batch == b.micro_batch && a.chunk_layers == b.chunk_layers;
}

std::vector<std::int64_t> chunk_layer_counts(const model::ModelSpec& m, const MappingConfig& c) {
  const std::int64_t chunks = c.pp * c.vpp;
  if (c.chunk_layers.empty()) {
    if (m.num_layers % chunks != 0) throw_input_error("parallelism.pp", "layers do not split over pp x vpp");
    return std::vector<std::int64_t>(static_cast<std::size_t>(chunks), m.num_layers / chunks);
  }
  if (static_cast<std::int64_t>(c.chunk_layers.size()) != chunks)
    throw_input_error("parallelism.pipeline_layout",
                      fmt::format("{} stages, and pp x vpp = {} x {} = {}", c.chunk_layers.size(), c.pp, c.vpp, chunks));
  std::int64_t total = 0;
  for (std::int64_t n : c.chunk_layers) total += n;
  if (total != m.num_layers)
    throw_input_error("parallelism.pipeline_layout",
                      fmt::format("{} blocks, and the model has {} layers", total, m.num_layers));
  return c.chunk_layers;
}

bool has_dense_blocks(const model::ModelSpec& m) { return m.num_moe_layers() < m.num_layers; }

StageBlocks stage_blocks(const model::ModelSpec& m, const MappingConfig& c, std::int64_t stage) {
  if (!has_dense_blocks(m) && c.chunk_layers.empty()) return {as_double(m.num_layers) / as_double(c.pp), 0.0};
  const std::vector<std::int64_t> counts = chunk_layer_counts(m, c);
  StageBlocks n;
  std::int64_t first = 0;
  for (std::int64_t v = 0; v < c.pp * c.vpp; ++v) {
    const std::int64_t count = counts[static_cast<std::size_t>(v)];
    if (v % c.pp == stage)
      for (std::int64_t i = first; i < first + count; ++i)
        (m.moe_layer[static_cast<std::size_t>(i)] ? n.moe : n.dense) += 1.0;
    first += count;
  }
  return n;
}

}  // namespace moeplan::cost
