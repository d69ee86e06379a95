#include <moeplan/cost/mapping.hpp>

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
  return p;
}

MappingConfig MappingConfig::from(const model::ParallelSpec& p, std::int64_t micro_batch) {
  return MappingConfig{p.tp, p.cp, p.pp, p.vpp, p.ep, p.etp, micro_batch, p.dp, p.edp};
}

bool same_mapping(const MappingConfig& a, const MappingConfig& b) {
  return a.tp == b.tp && a.cp == b.cp && a.pp == b.pp && a.vpp == b.vpp && a.ep == b.ep && a.etp == b.etp &&
         a.micro_batch == b.micro_batch;
}

bool has_dense_blocks(const model::ModelSpec& m) { return m.num_moe_layers() < m.num_layers; }

StageBlocks stage_blocks(const model::ModelSpec& m, const MappingConfig& c, std::int64_t stage) {
  if (!has_dense_blocks(m)) return {as_double(m.num_layers) / as_double(c.pp), 0.0};
  if (m.num_layers % (c.pp * c.vpp) != 0) throw_input_error("parallelism.pp", "layers do not split over pp x vpp");
  const std::int64_t per_chunk = m.num_layers / (c.pp * c.vpp);
  StageBlocks n;
  for (std::int64_t chunk = 0; chunk < c.vpp; ++chunk)
    for (std::int64_t i = 0; i < per_chunk; ++i)
      (m.moe_layer[static_cast<std::size_t>((chunk * c.pp + stage) * per_chunk + i)] ? n.moe : n.dense) += 1.0;
  return n;
}

}  // namespace moeplan::cost
