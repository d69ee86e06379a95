#include <catch2/catch.hpp>

#include <map>
#include <set>

#include <moeplan/io/json.hpp>
#include <moeplan/io/timeline_writer.hpp>
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

TEST_CASE("io::ChromeTraceWriter writes one complete event per task and resource", "[io][sim]") {
  sim::RandomDagOptions o;
  o.seed = 3;
  o.logical_tasks = 200;
  o.ranks = 3;
  const dag::TaskGraph g = sim::random_dag(o);
  const sim::Timeline tl = sim::simulate(g);
  const io::Json trace = io::Json::parse(io::ChromeTraceWriter().write(g, tl));
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

TEST_CASE("io::SvgGanttWriter writes well-formed SVG", "[io][sim]") {
  sim::PipelineDagOptions o;
  o.ranks = 4;
  o.layers = 2;
  o.micro_batches = 2;
  o.group_size = 2;
  const dag::TaskGraph g = sim::pipeline_dag(o);
  const std::string svg = io::SvgGanttWriter().write(g, sim::simulate(g));
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
  CHECK(io::xml_escape("a<b & \"c\"") == "a&lt;b &amp; &quot;c&quot;");
}
