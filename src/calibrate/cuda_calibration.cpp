// calibrate --backend cuda from the moeplan binary: the measuring is done by
// the CUDA plug-in (hostrt/cuda_plugin.hpp), loaded here on first use.

#include <moeplan/calibrate/cuda_calibration.hpp>

#include <moeplan/hostrt/cuda_plugin.hpp>

namespace moeplan::calibrate {

HostCalibration run_cuda_calibration(const CudaCalibrationOptions& options) {
  return hostrt::cuda_plugin().run_calibration(options);
}

}  // namespace moeplan::calibrate
