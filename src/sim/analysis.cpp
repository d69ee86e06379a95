#include <moeplan/sim/analysis.hpp>

#include <algorithm>
#include <map>

#include <moeplan/core/error.hpp>

namespace moeplan::sim {
namespace {

using Interval = std::pair<double, double>;

}  // namespace

double covered_ms(std::vector<Interval>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const Interval& i : intervals) {
    if (i.second <= i.first) continue;
    if (!merged.empty() && i.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, i.second);
    else
      merged.push_back(i);
  }
  intervals.swap(merged);
  double total = 0;
  for (const Interval& i : intervals) total += i.second - i.first;
  return total;
}

namespace {

// Length of the intersection of two merged interval lists.
double overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].first, b[j].first);
    const double hi = std::min(a[i].second, b[j].second);
    if (hi > lo) total += hi - lo;
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return total;
}

}  // namespace

Summary summarize(const dag::TaskGraph& g, const Timeline& tl) {
  Summary s;
  s.makespan_ms = tl.makespan_ms;
  for (const dag::Resource& r : g.resources()) s.resources.push_back({r.name, r.rank, 0.0, 0});
  struct PerRank {
    std::vector<Interval> compute, comm;
    double end = 0;
  };
  std::map<std::int32_t, PerRank> ranks;
  // A shared link runs several transfers at once: its busy time is their union.
  std::map<dag::ResourceId, std::vector<Interval>> shared;
  for (dag::TaskId t = 0; t < g.size(); ++t) {
    const Interval interval{tl.start_ms[t], tl.end_ms[t]};
    for (dag::ResourceId res : g.resources(t)) {
      if (g.resources()[res].policy == dag::DispatchPolicy::Shared)
        shared[res].push_back(interval);
      else
        s.resources[res].busy_ms += interval.second - interval.first;
      ++s.resources[res].tasks;
      PerRank& pr = ranks[g.resources()[res].rank];
      (g.kind(t) == dag::TaskKind::Compute ? pr.compute : pr.comm).push_back(interval);
      pr.end = std::max(pr.end, interval.second);
    }
  }
  for (auto& [res, intervals] : shared) s.resources[res].busy_ms = covered_ms(intervals);
  for (auto& [rank, pr] : ranks) {
    RankSummary r;
    r.rank = rank;
    r.end_ms = pr.end;
    r.compute_busy_ms = covered_ms(pr.compute);
    r.comm_busy_ms = covered_ms(pr.comm);
    r.exposed_comm_ms = r.comm_busy_ms - overlap(pr.compute, pr.comm);
    r.bubble_ms = tl.makespan_ms - r.compute_busy_ms;
    if (s.ranks.empty() || r.end_ms > s.critical_rank.end_ms) s.critical_rank = r;
    s.ranks.push_back(r);
  }
  return s;
}

std::vector<CriticalStep> critical_path(const dag::TaskGraph& g, const Timeline& tl) {
  std::vector<CriticalStep> path;
  if (g.size() == 0) return path;
  // The task that ends last (lowest id on ties).
  dag::TaskId t = 0;
  for (dag::TaskId i = 1; i < g.size(); ++i)
    if (tl.end_ms[i] > tl.end_ms[t]) t = i;
  // Tasks of each resource by end time, to find who freed a resource at an instant.
  std::vector<std::vector<dag::TaskId>> by_resource(g.resources().size());
  for (dag::TaskId i = 0; i < g.size(); ++i)
    for (dag::ResourceId r : g.resources(i)) by_resource[r].push_back(i);
  for (auto& list : by_resource)
    std::sort(list.begin(), list.end(), [&](dag::TaskId a, dag::TaskId b) {
      return tl.end_ms[a] != tl.end_ms[b] ? tl.end_ms[a] < tl.end_ms[b] : a < b;
    });
  const dag::CsrGraph& pred = g.predecessors_graph();
  while (true) {
    const double start = tl.start_ms[t];
    std::optional<dag::TaskId> before;
    StartCause cause = StartCause::Origin;
    // Start times are copies of end times, so equality is exact.
    for (auto e : boost::make_iterator_range(out_edges(t, pred))) {
      const dag::TaskId p = target(e, pred);
      if (tl.end_ms[p] == start && (!before || p < *before)) before = p;
    }
    if (before) {
      cause = StartCause::Dependency;
    } else if (start > 0) {
      for (dag::ResourceId r : g.resources(t)) {
        const auto& list = by_resource[r];
        auto it = std::lower_bound(list.begin(), list.end(), start,
                                   [&](dag::TaskId a, double time) { return tl.end_ms[a] < time; });
        // Only a task the resource took before t can have freed it for t:
        // zero-length tasks end at the instant they start, so two of them on
        // one resource each "end at the other's start" (the walk used to step
        // between them forever).
        for (; it != list.end() && tl.end_ms[*it] == start; ++it)
          if (tl.start_order[*it] < tl.start_order[t] && (!before || *it < *before)) before = *it;
      }
      if (before) cause = StartCause::Resource;
    }
    path.push_back({t, cause});
    if (!before) break;
    // Every step goes to a task that started earlier (a dependency ended
    // before t was ready; a resource was freed before t took it), so the walk
    // visits each task at most once.
    MOEPLAN_CHECK(tl.start_order[*before] < tl.start_order[t], "critical path steps to a later task");
    MOEPLAN_CHECK(path.size() <= g.size(), "critical path longer than the graph");
    t = *before;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

double critical_path_ms(const dag::TaskGraph& g, const Timeline& tl, const std::vector<CriticalStep>& path,
                        dag::TaskKind kind) {
  double total = 0;
  for (const CriticalStep& s : path)
    if (g.kind(s.task) == kind) total += tl.end_ms[s.task] - tl.start_ms[s.task];
  return total;
}

const char* to_string(StartCause cause) {
  switch (cause) {
    case StartCause::Dependency:
      return "dependency";
    case StartCause::Resource:
      return "resource";
    default:
      return "origin";
  }
}

}  // namespace moeplan::sim
