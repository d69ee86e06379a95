#include <moeplan/sched/schedule.hpp>

#include <moeplan/cost/cost_model.hpp>

namespace moeplan::sched {

model::LinkClass group_link(std::int64_t size, std::int64_t stride, std::int64_t gpus_per_node) {
  std::vector<std::int64_t> ranks;
  for (std::int64_t i = 0; i < size; ++i) ranks.push_back(i * stride);
  return cost::link_class_of(ranks, gpus_per_node);
}

}  // namespace moeplan::sched
