#include <moeplan/cost/host_issue.hpp>

#include <algorithm>

namespace moeplan::cost {

bool moe_dispatch_waits_on_host(const model::MoeSpec& moe, const model::CudaGraphs& graphs) {
  return !moe.capacity_factor && !graphs.full_iteration;
}

BlockHostTimes moe_block_host_ms(const model::HostIssueModelSpec& host, const model::CudaGraphs& graphs,
                                 double local_experts) {
  BlockHostTimes t;
  if (graphs.full_iteration) return t;  // one graph launch for the whole iteration
  // A captured part costs the host one graph launch: within the launch
  // overhead the profile's kernel lines already price, so nothing here.
  // The router part holds the router and the dispatcher's preprocessing,
  // captured together (parse_cuda_graphs refuses one without the other).
  const double router = graphs.moe_router ? 0.0 : host.router_ms;
  t.moe_layer_ms = router + host.moe_ms + host.local_expert_ms * local_experts;
  t.block_ms = (graphs.attn ? 0.0 : host.attention_ms) + t.moe_layer_ms;
  return t;
}

double host_wait_ms(double host_ms, double gpu_ms) { return std::max(0.0, host_ms - gpu_ms); }

}  // namespace moeplan::cost
