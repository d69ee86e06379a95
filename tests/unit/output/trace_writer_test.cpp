#include <catch2/catch.hpp>

#include <map>
#include <set>

#include <moeplan/io/json.hpp>
#include <moeplan/output/timeline_writer.hpp>
#include <moeplan/sim/synthetic_dag.hpp>

using namespace moeplan;

namespace {

// Minimal XML well-formedness: balanced tags, quoted attributes, known entities.
bool well_formed_xml(const std::string& xml, std::string& why) {
  std::vector<std::string> stack;
  std::size_t i = 0;
  if (xml.rfind("<?xml", 0) == 0) i = xml.find("?>") + 2;
  bool root_seen = false;
  while (i < xml.size()) {
    if (xml[i] == '<') {
      const std::size_t end = xml.find('>', i);
      if (end == std::string::npos) return why = "unclosed tag", false;
      std::string tag = xml.substr(i + 1, end - i - 1);
      if (!tag.empty() && tag[0] == '/') {
        const std::string name = tag.substr(1);
        if (stack.empty() || stack.back() != name) return why = "mismatched </" + name + ">", false;
        stack.pop_back();
      } else {
        const bool self_closing = !tag.empty() && tag.back() == '/';
        if (self_closing) tag.pop_back();
        const std::string name = tag.substr(0, tag.find_first_of(" \n\t"));
        if (name.empty()) return why = "empty tag name", false;
        // attributes: name="value" pairs, values without raw '<' or '&' (except entities)
        std::size_t q = 0;
        int quotes = 0;
        while ((q = tag.find('"', q)) != std::string::npos) {
          ++quotes;
          ++q;
        }
        if (quotes % 2 != 0) return why = "unbalanced quotes in <" + name + ">", false;
        if (stack.empty() && root_seen) return why = "two root elements", false;
        root_seen = true;
        if (!self_closing) stack.push_back(name);
      }
      i = end + 1;
    } else if (xml[i] == '&') {
      const std::size_t end = xml.find(';', i);
      static const std::set<std::string> entities{"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
      if (end == std::string::npos || !entities.count(xml.substr(i, end - i + 1))) return why = "bad entity", false;
      i = end + 1;
    } else {
      ++i;
    }
  }
  if (!stack.empty()) return why = "unclosed <" + stack.back() + ">", false;
  return root_seen;
}

}  // namespace

TEST_CASE("output::ChromeTraceWriter writes one complete event per task and resource", "[io][sim]") {
  sim::RandomDagOptions o;
  o.seed = 3;
  o.logical_tasks = 200;
  o.ranks = 3;
  const dag::TaskGraph g = sim::random_dag(o);
  const sim::Timeline tl = sim::simulate(g);
  const io::Json trace = io::Json::parse(output::ChromeTraceWriter().write(g, tl));
  const io::Json* events = trace.find("traceEvents");
  REQUIRE(events != nullptr);
  std::size_t expected = 0;
  for (dag::TaskId t = 0; t < g.size(); ++t) expected += g.resources(t).size();
  std::size_t complete = 0, process_names = 0, thread_names = 0;
  std::map<std::pair<double, double>, std::vector<std::pair<double, double>>> lanes;  // (pid, tid) -> [ts, ts+dur)
  for (const io::Json& e : events->as_array()) {
    const std::string ph = e.find("ph")->as_string();
    if (ph == "M") {
      const std::string name = e.find("name")->as_string();
      process_names += name == "process_name";
      thread_names += name == "thread_name";
      continue;
    }
    REQUIRE(ph == "X");
    ++complete;
    for (const char* key : {"name", "ts", "dur", "pid", "tid", "args", "cat"}) CHECK(e.find(key) != nullptr);
    const io::Json* args = e.find("args");
    for (const char* key : {"op", "size", "layer", "micro_batch", "phase"}) CHECK(args->find(key) != nullptr);
    CHECK(e.find("dur")->as_number() >= 0);
    lanes[{e.find("pid")->as_number(), e.find("tid")->as_number()}].emplace_back(
        e.find("ts")->as_number(), e.find("ts")->as_number() + e.find("dur")->as_number());
  }
  CHECK(complete == expected);
  CHECK(process_names == 3);
  CHECK(thread_names == g.resources().size());
  // Every resource of random_dag is in-order here: its events never overlap.
  for (auto& [lane, spans] : lanes) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) CHECK(spans[i].first >= spans[i - 1].second - 1e-6);
  }
}

TEST_CASE("output::SvgGanttWriter writes well-formed SVG", "[io][sim]") {
  sim::PipelineDagOptions o;
  o.ranks = 4;
  o.layers = 2;
  o.micro_batches = 2;
  o.group_size = 2;
  const dag::TaskGraph g = sim::pipeline_dag(o);
  const std::string svg = output::SvgGanttWriter().write(g, sim::simulate(g));
  std::string why;
  CHECK(well_formed_xml(svg, why));
  INFO(why);
  CHECK(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  // One task rectangle per (task, resource), each with a tooltip.
  std::size_t titles = 0;
  for (std::size_t at = 0; (at = svg.find("<title>", at)) != std::string::npos; ++at) ++titles;
  std::size_t expected = 0;
  for (dag::TaskId t = 0; t < g.size(); ++t) expected += g.resources(t).size();
  CHECK(titles == expected);
  std::string bad;
  CHECK_FALSE(well_formed_xml("<svg><g></svg>", bad));
  CHECK(output::xml_escape("a<b & \"c\"") == "a&lt;b &amp; &quot;c&quot;");
}

TEST_CASE("output::ChromeTraceWriter draws the chosen ranks only and says what each task is", "[io][sim]") {
  // Issue 14, item 9. A 4-rank pipeline DAG; drawing ranks {3, 1} (any order)
  // keeps exactly the (task, resource) pairs whose resource is on rank 1 or 3.
  sim::PipelineDagOptions o;
  o.ranks = 4;
  o.layers = 2;
  o.micro_batches = 2;
  o.group_size = 2;
  const dag::TaskGraph g = sim::pipeline_dag(o);
  const sim::Timeline tl = sim::simulate(g);
  const io::Json trace = io::Json::parse(output::ChromeTraceWriter({3, 1, 3}).write(g, tl));
  std::size_t expected = 0;
  for (dag::TaskId t = 0; t < g.size(); ++t)
    for (dag::ResourceId r : g.resources(t)) expected += g.resources()[r].rank == 1 || g.resources()[r].rank == 3;
  REQUIRE(expected > 0);
  std::size_t complete = 0;
  std::set<double> pids, process_names;
  for (const io::Json& e : trace.find("traceEvents")->as_array()) {
    if (e.find("ph")->as_string() == "M") {
      if (e.find("name")->as_string() == "process_name") process_names.insert(e.find("pid")->as_number());
      continue;
    }
    ++complete;
    pids.insert(e.find("pid")->as_number());
    // The args are the DAG's labels of the task they name.
    const io::Json& args = *e.find("args");
    const auto t = static_cast<dag::TaskId>(args.find("task")->as_number());
    REQUIRE(t < g.size());
    CHECK(e.find("name")->as_string() == std::string(g.name(t)));
    const bool compute = g.kind(t) == dag::TaskKind::Compute;
    CHECK(args.find("kind")->as_string() == (compute ? "compute" : "communication"));
    CHECK(args.find(compute ? "flops" : "bytes")->as_number() == g.size(t));
    CHECK(args.find(compute ? "bytes" : "flops") == nullptr);
    CHECK(args.find("size")->as_number() == g.size(t));
    CHECK(args.find("group")->as_number() == g.group_size(t));
    CHECK(args.find("members")->as_number() == static_cast<double>(g.resources(t).size()));
    CHECK(args.find("layer")->as_number() == g.layer(t));
    CHECK(args.find("micro_batch")->as_number() == g.micro_batch(t));
  }
  CHECK(complete == expected);
  CHECK(pids == std::set<double>{1, 3});
  CHECK(process_names == std::set<double>{1, 3});
}

TEST_CASE("output::SvgGanttWriter draws one lane per resource of the chosen ranks", "[io][sim]") {
  sim::PipelineDagOptions o;
  o.ranks = 4;
  o.layers = 2;
  o.micro_batches = 2;
  o.group_size = 2;
  const dag::TaskGraph g = sim::pipeline_dag(o);
  const sim::Timeline tl = sim::simulate(g);
  auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = text.find(what, at)) != std::string::npos; ++at) ++n;
    return n;
  };
  std::size_t lanes = 0, rects = 0;
  for (const dag::Resource& r : g.resources()) lanes += r.rank == 2;
  for (dag::TaskId t = 0; t < g.size(); ++t)
    for (dag::ResourceId r : g.resources(t)) rects += g.resources()[r].rank == 2;
  const std::string svg = output::SvgGanttWriter({2}).write(g, tl);
  std::string why;
  CHECK(well_formed_xml(svg, why));
  CHECK(count(svg, "<text x=\"4\"") == lanes);
  CHECK(count(svg, "<title>") == rects);
  CHECK(count(svg, ">rank 2 ") == lanes);
  CHECK(count(svg, ">rank 0 ") == 0);
  // No ranks chosen: every rank.
  CHECK(count(output::SvgGanttWriter().write(g, tl), "<text x=\"4\"") == g.resources().size());
}

TEST_CASE("output::ChromeTraceWriter with_dependencies writes one flow pair per edge, from the earlier task", "[io][sim]") {
  // Three tasks on one stream: a -> b, a -> c (issue order a, b, c): two edges, so two flow pairs,
  // each "s" inside a (ts between a's start and end) and each "f" at its target's start.
  dag::TaskGraphBuilder b;
  const dag::ResourceId s = b.add_resource({"compute", 0, dag::DispatchPolicy::InOrder, 0});
  auto task = [&](const char* name, double ms) {
    dag::TaskSpec spec;
    spec.name = name;
    spec.duration_ms = ms;
    spec.resources = {s};
    return b.add_task(spec);
  };
  const dag::TaskId a = task("a", 2), t1 = task("b", 1), t2 = task("c", 1);
  b.add_dependency(a, t1);
  b.add_dependency(a, t2);
  const dag::TaskGraph g = std::move(b).build();
  const sim::Timeline tl = sim::simulate(g);  // a 0-2, b 2-3, c 3-4
  const io::Json trace = io::Json::parse(output::ChromeTraceWriter().with_dependencies().write(g, tl));
  std::map<double, double> from, to;  // id -> task
  std::map<double, double> to_ts;
  for (const io::Json& e : trace.find("traceEvents")->as_array()) {
    const std::string ph = e.find("ph")->as_string();
    if (ph == "s") {
      from[e.find("id")->as_number()] = e.find("args")->find("from")->as_number();
      CHECK(e.find("ts")->as_number() == 1000);  // a's midpoint, 1 ms in microseconds
    }
    if (ph == "f") {
      to[e.find("id")->as_number()] = e.find("args")->find("to")->as_number();
      to_ts[e.find("id")->as_number()] = e.find("ts")->as_number();
      CHECK(e.find("bp")->as_string() == "e");
    }
  }
  REQUIRE(from.size() == 2);
  REQUIRE(to.size() == 2);
  std::set<double> targets;
  for (const auto& [id, task_id] : from) {
    CHECK(task_id == a);
    targets.insert(to.at(id));
    CHECK(to_ts.at(id) == tl.start_ms[static_cast<dag::TaskId>(to.at(id))] * 1000);
  }
  CHECK(targets == std::set<double>{static_cast<double>(t1), static_cast<double>(t2)});
  // Without the option (simulate's traces): no flow events.
  const std::string plain = output::ChromeTraceWriter().write(g, tl);
  CHECK(plain.find("\"ph\":\"s\"") == std::string::npos);
}
