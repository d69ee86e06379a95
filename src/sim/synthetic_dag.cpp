#include <moeplan/sim/synthetic_dag.hpp>

#include <random>
#include <string>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::sim {
namespace {

// The random choices of one logical task, drawn in a fixed order so that every
// rank count sees the same logical graph.
struct Logical {
  bool collective;
  double duration_ms;
  std::int32_t priority;
  std::vector<std::size_t> dependencies;
};

std::vector<Logical> draw(const RandomDagOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<Logical> tasks(o.logical_tasks);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    Logical& l = tasks[i];
    l.collective = unit(rng) < o.comm_fraction;
    l.duration_ms = o.min_duration_ms + (o.max_duration_ms - o.min_duration_ms) * unit(rng);
    l.priority = static_cast<std::int32_t>(unit(rng) * 4);
    const auto deps = static_cast<std::int32_t>(unit(rng) * (o.max_dependencies + 1));
    for (std::int32_t d = 0; d < deps && i > 0; ++d) {
      const std::size_t reach = std::min<std::size_t>(i, static_cast<std::size_t>(o.window));
      const std::size_t j = i - 1 - static_cast<std::size_t>(unit(rng) * static_cast<double>(reach));
      if (std::find(l.dependencies.begin(), l.dependencies.end(), j) == l.dependencies.end())
        l.dependencies.push_back(j);
    }
  }
  return tasks;
}

}  // namespace

dag::TaskId random_dag_rank0_task(const RandomDagOptions& o, std::size_t logical) {
  // Compute tasks take `ranks` ids (rank 0 first), collectives one.
  const std::vector<Logical> tasks = draw(o);
  dag::TaskId id = 0;
  for (std::size_t i = 0; i < logical; ++i) id += tasks[i].collective ? 1 : static_cast<dag::TaskId>(o.ranks);
  return id;
}

dag::TaskGraph random_dag(const RandomDagOptions& o) {
  MOEPLAN_CHECK(o.ranks >= 1, "random_dag needs at least one rank");
  MOEPLAN_CHECK(o.shared_links == 0 || o.transfer_streams >= 1, "transfers on shared links need a stream");
  const std::vector<Logical> tasks = draw(o);
  dag::TaskGraphBuilder b;
  b.reserve(tasks.size() * static_cast<std::size_t>(o.ranks),
            tasks.size() * static_cast<std::size_t>(o.max_dependencies) * static_cast<std::size_t>(o.ranks));
  std::vector<dag::ResourceId> compute, comm;
  for (std::int32_t r = 0; r < o.ranks; ++r) {
    compute.push_back(b.add_resource({"compute", r, dag::DispatchPolicy::InOrder}));
    comm.push_back(
        b.add_resource({"comm", r, o.priority_comm ? dag::DispatchPolicy::Priority : dag::DispatchPolicy::InOrder}));
  }
  std::vector<dag::ResourceId> links, transfer_streams;
  for (std::int32_t k = 0; k < o.shared_links; ++k)
    links.push_back(b.add_resource({fmt::format("link{}", k), 0, dag::DispatchPolicy::Shared, o.link_capacity}));
  if (o.shared_links > 0)
    for (std::int32_t k = 0; k < o.transfer_streams; ++k)
      transfer_streams.push_back(b.add_resource({fmt::format("comm{}", k), 0, dag::DispatchPolicy::InOrder}));
  std::vector<dag::TaskId> first_id(tasks.size());  // rank 0's instance (or the collective)
  std::string name;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Logical& l = tasks[i];
    dag::TaskSpec spec;
    spec.duration_ms = l.duration_ms;
    spec.priority = l.priority;
    spec.micro_batch = static_cast<std::int32_t>(i);
    if (l.collective) {
      name = fmt::format("c{}", i);
      spec.name = name;
      spec.kind = dag::TaskKind::Communication;
      spec.op = model::OpClass::A2A;
      spec.resources = comm;
      spec.group_size = o.ranks;
      if (!links.empty()) {
        const std::size_t k = links.size();
        spec.resources = {transfer_streams[i % transfer_streams.size()], links[i % k]};
        if (k > 1 && (i / k) % 2 == 1) spec.resources.push_back(links[(i + 1) % k]);
        spec.latency_ms = 0.1 * l.duration_ms;
        spec.size = (l.duration_ms - spec.latency_ms) * o.link_capacity * o.transfer_share;
      }
      first_id[i] = b.add_task(spec);
    } else {
      name = fmt::format("t{}", i);
      spec.name = name;
      spec.kind = dag::TaskKind::Compute;
      spec.op = model::OpClass::Gemm;
      for (std::int32_t r = 0; r < o.ranks; ++r) {
        spec.resources = {compute[static_cast<std::size_t>(r)]};
        const dag::TaskId id = b.add_task(spec);
        if (r == 0) first_id[i] = id;
      }
    }
    // Rank r's instance of logical j: first_id + r for compute, the collective itself otherwise.
    auto instance = [&](std::size_t j, std::int32_t r) {
      return tasks[j].collective ? first_id[j] : first_id[j] + static_cast<dag::TaskId>(r);
    };
    for (std::size_t j : l.dependencies) {
      if (l.collective) {
        if (tasks[j].collective)
          b.add_dependency(first_id[j], first_id[i]);
        else
          for (std::int32_t r = 0; r < o.ranks; ++r) b.add_dependency(instance(j, r), first_id[i]);
      } else {
        for (std::int32_t r = 0; r < o.ranks; ++r) b.add_dependency(instance(j, r), instance(i, r));
      }
    }
  }
  return std::move(b).build();
}

dag::TaskGraph pipeline_dag(const PipelineDagOptions& o) {
  MOEPLAN_CHECK(o.ranks % o.group_size == 0, "ranks must be a multiple of the group size");
  dag::TaskGraphBuilder b;
  std::vector<dag::ResourceId> compute, comm;
  for (std::int32_t r = 0; r < o.ranks; ++r) {
    compute.push_back(b.add_resource({"compute", r, dag::DispatchPolicy::InOrder}));
    comm.push_back(b.add_resource({"comm", r, dag::DispatchPolicy::InOrder}));
  }
  const std::int32_t groups = o.ranks / o.group_size;
  // One pipeline task: compute on one rank, or a collective over ranks [first, first + count).
  auto add = [&](const char* name, bool collective, std::int32_t first, std::int32_t count, std::int32_t layer,
                 std::int32_t mb) {
    dag::TaskSpec s;
    s.name = name;
    s.kind = collective ? dag::TaskKind::Communication : dag::TaskKind::Compute;
    s.op = collective ? model::OpClass::A2A : model::OpClass::Gemm;
    s.duration_ms = collective ? o.collective_ms : o.compute_ms;
    for (std::int32_t r = first; r < first + count; ++r)
      s.resources.push_back((collective ? comm : compute)[static_cast<std::size_t>(r)]);
    s.group_size = count;
    s.phase = dag::Phase::Forward;
    s.layer = layer;
    s.micro_batch = mb;
    return b.add_task(s);
  };
  // Collectives over each group of ranks after `inputs[rank]`; returns each rank's collective.
  auto exchange = [&](const char* name, const std::vector<dag::TaskId>& inputs, std::int32_t layer, std::int32_t mb) {
    std::vector<dag::TaskId> out(static_cast<std::size_t>(o.ranks));
    for (std::int32_t g = 0; g < groups; ++g) {
      const dag::TaskId x = add(name, true, g * o.group_size, o.group_size, layer, mb);
      for (std::int32_t r = g * o.group_size; r < (g + 1) * o.group_size; ++r) {
        b.add_dependency(inputs[static_cast<std::size_t>(r)], x);
        out[static_cast<std::size_t>(r)] = x;
      }
    }
    return out;
  };
  // previous[mb][r] = rank r's last task of the layer before (the next layer's input).
  std::vector<std::vector<dag::TaskId>> previous(static_cast<std::size_t>(o.micro_batches));
  for (std::int32_t layer = 0; layer < o.layers; ++layer) {
    for (std::int32_t mb = 0; mb < o.micro_batches; ++mb) {
      auto& prev = previous[static_cast<std::size_t>(mb)];
      std::vector<dag::TaskId> a(static_cast<std::size_t>(o.ranks));
      for (std::int32_t r = 0; r < o.ranks; ++r) {
        a[static_cast<std::size_t>(r)] = add("A", false, r, 1, layer, mb);
        if (!prev.empty()) b.add_dependency(prev[static_cast<std::size_t>(r)], a[static_cast<std::size_t>(r)]);
      }
      const std::vector<dag::TaskId> x = exchange("X", a, layer, mb);
      std::vector<dag::TaskId> bb(static_cast<std::size_t>(o.ranks));
      for (std::int32_t r = 0; r < o.ranks; ++r) {
        bb[static_cast<std::size_t>(r)] = add("B", false, r, 1, layer, mb);
        b.add_dependency(x[static_cast<std::size_t>(r)], bb[static_cast<std::size_t>(r)]);
      }
      prev = exchange("Y", bb, layer, mb);
    }
  }
  return std::move(b).build();
}

}  // namespace moeplan::sim
