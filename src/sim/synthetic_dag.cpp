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
  // previous[r] = rank r's last task of the layer before (the next layer's input).
  std::vector<std::vector<dag::TaskId>> previous(static_cast<std::size_t>(o.micro_batches));
  for (std::int32_t layer = 0; layer < o.layers; ++layer) {
    for (std::int32_t mb = 0; mb < o.micro_batches; ++mb) {
      auto& prev = previous[static_cast<std::size_t>(mb)];
      std::vector<dag::TaskId> a(static_cast<std::size_t>(o.ranks));
      for (std::int32_t r = 0; r < o.ranks; ++r) {
        dag::TaskSpec s{"A",
                        dag::TaskKind::Compute,
                        model::OpClass::Gemm,
                        0,
                        o.compute_ms,
                        {compute[static_cast<std::size_t>(r)]},
                        1,
                        dag::Phase::Forward,
                        layer,
                        mb,
                        0,
                        {}};
        a[static_cast<std::size_t>(r)] = b.add_task(s);
        if (!prev.empty()) b.add_dependency(prev[static_cast<std::size_t>(r)], a[static_cast<std::size_t>(r)]);
      }
      std::vector<dag::TaskId> x(static_cast<std::size_t>(groups));
      for (std::int32_t g = 0; g < groups; ++g) {
        dag::TaskSpec s{"X",
                        dag::TaskKind::Communication,
                        model::OpClass::A2A,
                        0,
                        o.collective_ms,
                        {},
                        o.group_size,
                        dag::Phase::Forward,
                        layer,
                        mb,
                        0,
                        {}};
        for (std::int32_t r = g * o.group_size; r < (g + 1) * o.group_size; ++r)
          s.resources.push_back(comm[static_cast<std::size_t>(r)]);
        x[static_cast<std::size_t>(g)] = b.add_task(s);
        for (std::int32_t r = g * o.group_size; r < (g + 1) * o.group_size; ++r)
          b.add_dependency(a[static_cast<std::size_t>(r)], x[static_cast<std::size_t>(g)]);
      }
      std::vector<dag::TaskId> bb(static_cast<std::size_t>(o.ranks));
      for (std::int32_t r = 0; r < o.ranks; ++r) {
        dag::TaskSpec s{"B",
                        dag::TaskKind::Compute,
                        model::OpClass::Gemm,
                        0,
                        o.compute_ms,
                        {compute[static_cast<std::size_t>(r)]},
                        1,
                        dag::Phase::Forward,
                        layer,
                        mb,
                        0,
                        {}};
        bb[static_cast<std::size_t>(r)] = b.add_task(s);
        b.add_dependency(x[static_cast<std::size_t>(r / o.group_size)], bb[static_cast<std::size_t>(r)]);
      }
      prev.assign(static_cast<std::size_t>(o.ranks), 0);
      for (std::int32_t g = 0; g < groups; ++g) {
        dag::TaskSpec s{"Y",
                        dag::TaskKind::Communication,
                        model::OpClass::A2A,
                        0,
                        o.collective_ms,
                        {},
                        o.group_size,
                        dag::Phase::Forward,
                        layer,
                        mb,
                        0,
                        {}};
        for (std::int32_t r = g * o.group_size; r < (g + 1) * o.group_size; ++r)
          s.resources.push_back(comm[static_cast<std::size_t>(r)]);
        const dag::TaskId y = b.add_task(s);
        for (std::int32_t r = g * o.group_size; r < (g + 1) * o.group_size; ++r) {
          b.add_dependency(bb[static_cast<std::size_t>(r)], y);
          prev[static_cast<std::size_t>(r)] = y;
        }
      }
    }
  }
  return std::move(b).build();
}

}  // namespace moeplan::sim
