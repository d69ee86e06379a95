#include <moeplan/output/timeline_writer.hpp>

#include <algorithm>
#include <array>
#include <optional>

#include <boost/range/iterator_range.hpp>

#include <fmt/format.h>

#include <moeplan/io/json.hpp>

namespace moeplan::output {
namespace {

constexpr double kMicrosecondsPerMs = 1000.0;

}  // namespace

TimelineWriter::TimelineWriter(std::vector<std::int32_t> ranks) : ranks_(std::move(ranks)) {
  std::sort(ranks_.begin(), ranks_.end());
  ranks_.erase(std::unique(ranks_.begin(), ranks_.end()), ranks_.end());
}

std::vector<bool> TimelineWriter::shown_resources(const dag::TaskGraph& g) const {
  std::vector<bool> shown(g.resources().size(), true);
  if (ranks_.empty()) return shown;
  for (std::size_t i = 0; i < shown.size(); ++i)
    shown[i] = std::binary_search(ranks_.begin(), ranks_.end(), g.resources()[i].rank);
  return shown;
}

std::string trace_args(const dag::TaskGraph& g, dag::TaskId t) {
  const bool compute = g.kind(t) == dag::TaskKind::Compute;
  std::string args = fmt::format(
      R"("task":{},"kind":"{}","op":"{}","{}":{},"size":{},"group":{},"members":{},"layer":{},"micro_batch":{},)"
      R"("phase":"{}","priority":{})",
      t, dag::to_string(g.kind(t)), model::to_string(g.op(t)), compute ? "flops" : "bytes", g.size(t), g.size(t),
      g.group_size(t), g.resources(t).size(), g.layer(t), g.micro_batch(t), dag::to_string(g.phase(t)), g.priority(t));
  if (!g.tags(t).empty()) args += ",\"tags\":" + io::json_quote(std::string(g.tags(t)));
  return args;
}

std::string ChromeTraceWriter::write(const dag::TaskGraph& g, const sim::Timeline& tl) const {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto begin_event = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  const std::vector<bool> shown = shown_resources(g);
  // Metadata: one process per drawn rank, one thread per resource.
  std::vector<std::int32_t> ranks;
  for (std::size_t i = 0; i < g.resources().size(); ++i)
    if (shown[i]) ranks.push_back(g.resources()[i].rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  for (std::int32_t rank : ranks) {
    begin_event();
    out += fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"rank {}"}}}})", rank, rank);
  }
  for (std::size_t i = 0; i < g.resources().size(); ++i) {
    if (!shown[i]) continue;
    const dag::Resource& r = g.resources()[i];
    begin_event();
    out += fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})", r.rank, i,
                       io::json_quote(r.name));
    begin_event();
    out += fmt::format(R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                       r.rank, i, i);
  }
  for (dag::TaskId t = 0; t < g.size(); ++t) {
    const auto resources = g.resources(t);
    if (std::none_of(resources.begin(), resources.end(), [&](dag::ResourceId r) { return shown[r]; })) continue;
    const std::string name = io::json_quote(std::string(g.name(t)));
    const double ts = tl.start_ms[t] * kMicrosecondsPerMs;
    const double dur = (tl.end_ms[t] - tl.start_ms[t]) * kMicrosecondsPerMs;
    const std::string args = trace_args(g, t);
    for (dag::ResourceId res : resources) {
      if (!shown[res]) continue;
      begin_event();
      out += fmt::format(R"({{"name":{},"cat":"{}","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},"args":{{{}}}}})", name,
                         dag::to_string(g.kind(t)), ts, dur, g.resources()[res].rank, res, args);
    }
  }
  if (dependencies_) {
    const dag::CsrGraph& succ = g.successors_graph();
    std::size_t id = 0;
    auto drawn = [&](dag::TaskId t) -> std::optional<dag::ResourceId> {
      for (dag::ResourceId r : g.resources(t))
        if (shown[r]) return r;
      return std::nullopt;
    };
    for (dag::TaskId a = 0; a < g.size(); ++a) {
      const std::optional<dag::ResourceId> ra = drawn(a);
      if (!ra) continue;
      for (auto e : boost::make_iterator_range(out_edges(a, succ))) {
        const dag::TaskId b = target(e, succ);
        const std::optional<dag::ResourceId> rb = drawn(b);
        if (!rb) continue;
        const double mid = (tl.start_ms[a] + tl.end_ms[a]) / 2 * kMicrosecondsPerMs;
        begin_event();
        out += fmt::format(R"({{"name":"dependency","cat":"dependency","ph":"s","id":{},"ts":{},"pid":{},"tid":{},)"
                           R"("args":{{"from":{}}}}})",
                           id, mid, g.resources()[*ra].rank, *ra, a);
        begin_event();
        out += fmt::format(R"({{"name":"dependency","cat":"dependency","ph":"f","bp":"e","id":{},"ts":{},"pid":{},)"
                           R"("tid":{},"args":{{"to":{}}}}})",
                           id, tl.start_ms[b] * kMicrosecondsPerMs, g.resources()[*rb].rank, *rb, b);
        ++id;
      }
    }
  }
  out += "\n]}\n";
  return out;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;
    }
  }
  return out;
}

std::unique_ptr<TimelineWriter> writer_for(const std::string& path, std::vector<std::int32_t> ranks) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".svg") == 0)
    return std::make_unique<SvgGanttWriter>(std::move(ranks));
  return std::make_unique<ChromeTraceWriter>(std::move(ranks));
}

}  // namespace moeplan::output
