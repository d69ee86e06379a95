#include "calibrate_support.hpp"

#include <filesystem>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/calibrate/cuda_calibration.hpp>
#include <moeplan/calibrate/host_calibration.hpp>
#include <moeplan/core/error.hpp>
#include <moeplan/cost/fit.hpp>
#include <moeplan/io/profile_writer.hpp>
#include <moeplan/model/validate.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {

std::string check_calibration_request(const CalibrationRequest& o) {
  if (o.backend != "host" && o.backend != "cuda")
    throw Error(ErrorKind::Input, fmt::format("--backend: expected host or cuda, got {}", quoted_for_error(o.backend)));
  if (o.output == "-")
    throw Error(ErrorKind::Input, o.output_option + " -: calibrate writes the points beside the profile; give a file "
                                                     "name");
  check_utf8_option("--cluster", o.cluster);
  std::string name = o.name;
  if (name.empty()) {
    name = std::filesystem::path(o.output).filename().string();
    name = name.substr(0, name.find('.'));
  }
  check_utf8_option(o.name.empty() ? "--name (from the -o file name)" : "--name", name);
  return name;
}

std::optional<CalibratedProfile> calibrate_profile(const CalibrationRequest& o, std::ostream& err) {
  const std::string name = check_calibration_request(o);
  const std::string points = calibrate::points_path(o.output);

  const calibrate::HostCalibration c = o.backend == "cuda" ? calibrate::run_cuda_calibration({o.quick, &err})
                                                           : calibrate::run_host_calibration({o.quick, &err});
  if (c.rank != 0) return std::nullopt;  // rank 0 fits and writes
  if (!c.collectives_measured) err << "moeplan calibrate: note: " << c.note << '\n';

  // The points are this run's own measurements, not a user's file: a line they
  // cannot make (e.g. time falling as the size grows, after every re-measure)
  // says the machine was too busy to measure, a runtime failure (exit 1).
  cost::ProfileFit fit = [&] {
    try {
      return cost::fit_profile(c.samples, name, o.cluster);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Input) throw;
      throw Error(ErrorKind::Runtime,
                  fmt::format("the measurements do not fit a line (was the machine busy? calibrate on an idle one): {}",
                              e.what()));
    }
  }();
  fit.profile.overlap_compute_slowdown = c.overlap.slowdown;
  if (c.comm_overlap) fit.profile.overlap_comm_slowdown = c.comm_overlap->slowdown;
  fit.profile.gemm_shape = calibrate::calibrated_gemm_shape(c);
  fit.profile.attention_shape = calibrate::calibrated_attention_shape(c);
  for (model::LinearCostSpec& line : fit.profile.costs)
    line.source = fmt::format("least-squares fit of {} medians (moeplan calibrate --backend {}{})", line.points,
                              o.backend, o.quick ? " --quick" : "");
  // A measured profile out of the format's bounds is a failed measurement
  // (a machine too busy to time), not bad input: runtime failure, exit 1.
  try {
    model::validate(fit.profile);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Input) throw;
    throw Error(ErrorKind::Runtime, fmt::format("the measured profile is implausible (was the machine busy? calibrate "
                                                "on an idle one): {}: {}",
                                                e.field(), e.reason()));
  }
  for (const std::string& w : fit.warnings) err << "moeplan: warning: " << w << '\n';

  const bool cuda = o.backend == "cuda";
  std::string comment = fmt::format(
      "Measured on {} by `moeplan calibrate --backend {}{}` ({} rank{}); points: {}.\n"
      "Sizes are bytes (communication, nccl-tests' size) or FLOPs (compute); times ms.\n{}"
      "overlap_compute_slowdown = max(1, {:.6g} ms / {:.6g} ms): median of GEMM {}x{}x{} beside {},\n"
      "over its median alone (docs/cost-model.md, \"{} calibration\").",
      cuda ? c.device : "this host", o.backend, o.quick ? " --quick" : "", c.world_size, c.world_size == 1 ? "" : "s",
      std::filesystem::path(points).filename().string(),
      cuda ? "GEMMs: cuBLAS bf16 on the tensor cores (fp32 accumulation); gemm_fp8: cuBLASLt with E4M3 operands;\n"
             "elementwise: a bf16 -> FP8 cast kernel, bytes read + written; attention: block-causal batched cuBLAS\n"
             "GEMMs and a masked softmax kernel (not a fused FlashAttention kernel).\n"
           : "",
      c.overlap.with_ms, c.overlap.alone_ms, c.overlap.gemm.tokens,
      c.overlap.gemm.d_model, c.overlap.gemm.ffn, c.overlap.partner, cuda ? "CUDA" : "Host");
  for (const calibrate::OverlapMeasurement& m : c.overlap_measurements)
    if (m.partner != c.overlap.partner)
      comment += fmt::format("\nAlso measured: beside {}: {:.6g} ms / {:.6g} ms = {:.4g}.", m.partner, m.with_ms,
                             m.alone_ms, m.slowdown);
  if (c.comm_overlap)
    comment += fmt::format("\noverlap_comm_slowdown = max(1, {:.6g} ms / {:.6g} ms): median of a {:.0f} byte allreduce "
                           "beside {}, over its median alone.",
                           c.comm_overlap->with_ms, c.comm_overlap->alone_ms, c.comm_overlap->size_bytes,
                           c.comm_overlap->partner);
  else
    comment += "\noverlap_comm_slowdown not measured (needs mpirun with 2+ ranks): 1.";
  if (!c.collectives_measured)
    comment += fmt::format("\nNo collective lines: {}; a scenario that communicates fails on the missing line.", c.note);
  CalibratedProfile result;
  result.points_path = points;
  result.textproto = io::profile_to_textproto(fit.profile, comment);
  result.points_csv = calibrate::points_csv(c);
  std::string& summary = result.summary;

  for (const model::LinearCostSpec& line : fit.profile.costs)
    summary += fmt::format("{} {} group {}: alpha {:.6g} ms, beta {:.6g} ms/unit, r^2 {:.5f}, {} points\n",
                               model::to_string(line.op), model::to_string(line.link), line.group, line.alpha_ms,
                               line.beta_ms_per_unit, line.r2, line.points);
  if (const auto& g = fit.profile.gemm_shape)
    summary += fmt::format("gemm_shape: {} unit, tile {} x {}, peak {:.6g} GFLOP/s, memory {:.6g} GB/s, efficiency "
                               "{:.6g}, alpha {:.6g} ms, r^2 {:.5f}, {} points\n",
                               g->units, g->tile_m, g->tile_n, g->peak_flops_per_s / 1e9, g->memory_bytes_per_s / 1e9,
                               g->efficiency, g->alpha_ms, g->r2.value_or(0), g->points);
  summary += fmt::format("overlap_compute_slowdown {:.6g} (GEMM {:.6g} ms beside {}, {:.6g} ms alone)\n",
                             c.overlap.slowdown, c.overlap.with_ms, c.overlap.partner, c.overlap.alone_ms);
  if (c.comm_overlap)
    summary += fmt::format("overlap_comm_slowdown {:.6g} (allreduce {:.6g} ms beside {}, {:.6g} ms alone)\n",
                               c.comm_overlap->slowdown, c.comm_overlap->with_ms, c.comm_overlap->partner,
                               c.comm_overlap->alone_ms);
  result.profile = std::move(fit.profile);
  return result;
}

}  // namespace moeplan::cli
