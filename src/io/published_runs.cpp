#include <moeplan/io/published_runs.hpp>

#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include <moeplan/io/csv_cells.hpp>
#include <moeplan/io/text_file.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::io {
namespace {

// The columns, in the order the bundled table writes them (a table may order them otherwise).
constexpr std::array<const char*, 26> kColumns = {
    "id",  "source", "model", "model_ref", "set",       "cluster_ref", "profile_ref", "gpus",   "gpus_per_node",
    "tp",  "pp",     "vpp",   "cp",        "ep",        "etp",         "dp",          "seq",    "gbs",
    "mbs", "precision", "recompute", "family", "metric", "value", "peak_alloc_gib", "notes"};

// Bounds of the integer cells: a million GPUs, a 16M-token sequence, a
// billion-sequence batch (far beyond any published run: 1,024 GPUs, 131,072
// tokens, 8,192 sequences in the source table).
constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;
constexpr std::int64_t kMaxRunSeq = std::int64_t{1} << 24;
constexpr std::int64_t kMaxRunBatch = std::int64_t{1} << 30;
// A measured value: an iteration of at most a day (86,400 s), a throughput of
// at most 1e9 tokens/s per GPU; a peak allocation of at most 1e6 GiB.
constexpr double kMaxValue = 1e9;
constexpr double kMaxGib = 1e6;

std::vector<std::string> split_columns(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(text);
  while (std::getline(in, cell, sep)) out.push_back(cell);
  if (!text.empty() && text.back() == sep) out.emplace_back();
  return out;
}

class Row {
 public:
  Row(const std::map<std::string, std::size_t>& index, std::vector<std::string> cells, SourceLocation where)
      : index_(index), cells_(std::move(cells)), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& column, const std::string& reason) const {
    throw Error(ErrorKind::Input, reason, column, where_);
  }
  const std::string& text(const std::string& column) const { return cells_.at(index_.at(column)); }
  std::string word(const std::string& column) const {
    const std::string& t = text(column);
    if (t.empty()) fail(column, "required: empty");
    // The scenario text quotes it: no quote, backslash or control character.
    for (char c : t)
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
        fail(column, fmt::format("{} holds a quote, backslash or control character", quoted_for_error(t)));
    return t;
  }
  std::int64_t integer(const std::string& column, std::int64_t most) const {
    const double v = decimal_cell(text(column), where_, column);
    if (v != std::floor(v) || v < 1 || v > static_cast<double>(most))
      fail(column, fmt::format("expected a whole number in 1..{}, got {}", most, quoted_for_error(text(column))));
    return static_cast<std::int64_t>(v);
  }
  double positive(const std::string& column, double most) const {
    const double v = decimal_cell(text(column), where_, column);
    if (!(v > 0) || v > most) fail(column, fmt::format("expected a number in (0, {:g}], got {}", most, v));
    return v;
  }

 private:
  const std::map<std::string, std::size_t>& index_;
  std::vector<std::string> cells_;
  SourceLocation where_;
};

PublishedRun parse_row(const Row& r, int line) {
  PublishedRun p;
  p.line = line;
  p.id = r.word("id");
  p.source = r.word("source");
  p.model = r.word("model");
  p.model_ref = r.word("model_ref");
  p.cluster_ref = r.word("cluster_ref");
  p.profile_ref = r.word("profile_ref");
  for (const std::string& o : split_columns(r.text("set"), ';'))
    if (!o.empty()) {
      try {
        p.overrides.push_back(parse_override(o));
      } catch (const Error& e) {
        r.fail("set", e.reason());
      }
    }
  p.gpus = r.integer("gpus", kMaxGpus);
  p.gpus_per_node = r.integer("gpus_per_node", kMaxGpus);
  if (p.gpus % p.gpus_per_node != 0)
    r.fail("gpus", fmt::format("{} GPUs are not whole nodes of {}", p.gpus, p.gpus_per_node));
  p.tp = r.integer("tp", kMaxGpus);
  p.pp = r.integer("pp", kMaxGpus);
  p.vpp = r.integer("vpp", kMaxGpus);
  p.cp = r.integer("cp", kMaxGpus);
  p.ep = r.integer("ep", kMaxGpus);
  p.etp = r.integer("etp", kMaxGpus);
  p.dp = r.integer("dp", kMaxGpus);
  // dp is what Megatron derives; the row's must be that, or the row is not the run it says.
  if (p.tp * p.cp * p.pp * p.dp != p.gpus)
    r.fail("dp", fmt::format("tp*cp*pp*dp = {}*{}*{}*{} is not the {} GPUs", p.tp, p.cp, p.pp, p.dp, p.gpus));
  p.seq = r.integer("seq", kMaxRunSeq);
  p.global_batch = r.integer("gbs", kMaxRunBatch);
  p.micro_batch = r.integer("mbs", kMaxRunBatch);
  p.precision = r.word("precision");
  // moeplan's names (workload.precision): the source's ("MXFP8", "FP8-CS") are in the notes.
  if (!model::precision_from_string(p.precision))
    r.fail("precision", fmt::format("expected bf16, fp8_delayed, fp8_tensorwise, fp8_blockwise or mxfp8, got {}",
                                    quoted_for_error(p.precision)));
  p.recompute = r.word("recompute");
  // The short form (model/recompute.hpp): none, selective[:MODULE+...], full[:METHOD:LAYERS].
  try {
    (void)model::parse_recompute(p.recompute, "recompute");
  } catch (const Error& e) {
    r.fail("recompute", e.reason());
  }
  p.family = r.word("family");
  p.metric = r.word("metric");
  if (p.metric == "iteration_s")
    p.value = r.positive("value", 86400.0);
  else if (p.metric == "tokens_per_s_per_gpu")
    p.value = r.positive("value", kMaxValue);
  else
    r.fail("metric", fmt::format("expected iteration_s or tokens_per_s_per_gpu, got {}", quoted_for_error(p.metric)));
  if (!r.text("peak_alloc_gib").empty()) p.peak_alloc_gib = r.positive("peak_alloc_gib", kMaxGib);
  p.notes = r.text("notes");
  return p;
}

}  // namespace

double PublishedRun::measured_iteration_s() const {
  if (metric == "iteration_s") return value;
  // tokens/s per GPU = global batch x sequence / (iteration x GPUs)
  return static_cast<double>(global_batch) * static_cast<double>(seq) / (value * static_cast<double>(gpus));
}

std::string PublishedRun::scenario_text() const {
  std::string id_name;
  for (char c : id) id_name += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  std::string out = "# proto-message: Scenario\n";
  out += fmt::format("name: \"published-{}\"\n", id_name);
  out += fmt::format("description: \"published run {} ({})\"\n", id, model);
  out += fmt::format("model_ref: \"{}\"\ncluster_ref: \"{}\"\nprofile_ref: \"{}\"\n", model_ref, cluster_ref,
                     profile_ref);
  out += fmt::format("set: \"cluster.num_nodes={}\"\n", gpus / gpus_per_node);
  // Sequence parallelism is left to the family (the folding family prices Megatron-Core's, on whenever tp > 1).
  out += fmt::format("parallelism {{\n  tp: {}\n  pp: {}\n  vpp: {}\n  cp: {}\n  ep: {}\n  etp: {}\n}}\n", tp, pp,
                     vpp, cp, ep, etp);
  out += fmt::format("workload {{\n  seq_len: {}\n  micro_batch_size: {}\n  global_batch_size: {}\n", seq,
                     micro_batch, global_batch);
  if (precision != "bf16") out += fmt::format("  precision: \"{}\"\n", precision);
  out += "}\n";
  const model::RecomputeSpec r = model::parse_recompute(recompute, "recompute");
  out += fmt::format("schedule {{\n  family: \"{}\"\n  recompute: \"{}\"\n", family, r.granularity);
  for (const std::string& module : r.modules) out += fmt::format("  recompute_modules: \"{}\"\n", module);
  if (r.granularity == "full")
    out += fmt::format("  recompute_method: \"{}\"\n  recompute_num_layers: {}\n", r.method, r.num_layers);
  out += "}\n";
  return out;
}

std::vector<PublishedRun> read_published_runs(const std::string& path) {
  const std::string text = read_text_file(path);
  std::vector<PublishedRun> out;
  std::map<std::string, std::size_t> index;
  std::map<std::string, int> ids;
  std::istringstream in(text);
  int line_no = 0;
  std::size_t columns = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const SourceLocation where{path, line_no, 0};
    std::vector<std::string> cells = split_columns(line, '\t');
    if (index.empty()) {
      for (std::size_t i = 0; i < cells.size(); ++i)
        if (!index.emplace(cells[i], i).second)
          throw Error(ErrorKind::Input, fmt::format("column {} appears twice", quoted_for_error(cells[i])), "header",
                      where);
      for (const char* c : kColumns)
        if (!index.count(c)) throw Error(ErrorKind::Input, fmt::format("column {} is missing", c), "header", where);
      if (index.size() != kColumns.size())
        throw Error(ErrorKind::Input, fmt::format("{} columns, expected the {} of docs/validation.md", index.size(),
                                                  kColumns.size()),
                    "header", where);
      columns = cells.size();
      continue;
    }
    if (cells.size() != columns)
      throw Error(ErrorKind::Input, fmt::format("{} cells, the header has {}", cells.size(), columns), "row", where);
    if (out.size() == kMaxPublishedRuns)
      throw Error(ErrorKind::Input, fmt::format("more than {} rows", kMaxPublishedRuns), "row", where);
    PublishedRun run = parse_row(Row(index, std::move(cells), where), line_no);
    if (const auto [it, fresh] = ids.emplace(run.id, line_no); !fresh)
      throw Error(ErrorKind::Input, fmt::format("id {} is already on line {}", run.id, it->second), "id", where);
    out.push_back(std::move(run));
  }
  if (index.empty()) throw Error(ErrorKind::Input, "no header: the table is empty", "header", SourceLocation{path, 0, 0});
  return out;
}

std::string bundled_published_runs() {
  return (std::filesystem::path(data_root()) / "tests" / "data" / "published-runs.tsv").string();
}

}  // namespace moeplan::io
