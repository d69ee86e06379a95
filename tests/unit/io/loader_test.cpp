#include <catch2/catch.hpp>

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>

#include "io/proto/moeplan.pb.h"
#include "proto_text.hpp"

namespace fs = std::filesystem;
using moeplan::Error;
using moeplan::format_error;

namespace {

// The request's options named as the CLI names them (src/cli/cli_common.cpp
// flag_of): the set option is --set.
std::string as_flag(std::string_view field) {
  std::string flag = "--" + std::string(field.substr(moeplan::kRequestField.size()));
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

std::string error_of(const std::string& path, const std::vector<moeplan::io::Override>& overrides = {}) {
  try {
    moeplan::io::validate_file(path, overrides);
  } catch (const Error& e) {
    CHECK(e.kind() == moeplan::ErrorKind::Input);
    return format_error(e, as_flag);
  }
  return "";
}

// A text the way a generator with a stray index writes it: the file's name
// followed at once by a digit ("mixtral-8x7b0", "fsmoe-testbed-a-gpt2-xl3").
bool has_name_and_stray_digit(const std::string& text, const std::string& name) {
  for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    const std::size_t after = at + name.size();
    if (after < text.size() && std::isdigit(static_cast<unsigned char>(text[after]))) return true;
  }
  return false;
}

std::unique_ptr<google::protobuf::Message> message_of(moeplan::io::FileKind kind) {
  using moeplan::io::FileKind;
  namespace pb = moeplan::pb;
  switch (kind) {
    case FileKind::Model:
      return std::make_unique<pb::Model>();
    case FileKind::Cluster:
      return std::make_unique<pb::Cluster>();
    case FileKind::Profile:
      return std::make_unique<pb::CostProfile>();
    case FileKind::Scenario:
      return std::make_unique<pb::Scenario>();
    case FileKind::Sweep:
      return std::make_unique<pb::Sweep>();
    case FileKind::Plan:
      return std::make_unique<pb::Plan>();
  }
  return nullptr;
}

// The first comment line after the "# proto-message:" header ("" if none).
std::string header_comment(const std::string& text) {
  std::size_t start = text.find('\n') + 1;
  const std::size_t end = text.find('\n', start);
  const std::string line = text.substr(start, end - start);
  return line.rfind("# ", 0) == 0 ? line.substr(2) : "";
}

// Writes text to path, making its folder.
void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string read_file(const fs::path& path) { return moeplan::io::read_text_file(path.string()); }

// Runs the rest of a scope in another working directory.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const fs::path& to) : from_(fs::current_path()) { fs::current_path(to); }
  ~WorkingDirectory() { fs::current_path(from_); }
  WorkingDirectory(const WorkingDirectory&) = delete;
  WorkingDirectory& operator=(const WorkingDirectory&) = delete;

 private:
  fs::path from_;
};

// A fresh folder under the system's temporary folder, removed at scope end.
class TempFolder {
 public:
  explicit TempFolder(const std::string& tag)
      : path_(fs::temp_directory_path() / ("moeplan-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

TEST_CASE("bundled files describe themselves with no stray digit after their name", "[io][zoo]") {
  // Models, clusters, scenarios and sweeps are what users pick by name, so each
  // needs a one-line description. Profiles are written by `moeplan fit` and
  // `datasheet-profile`, which put their provenance in the header comment (and a
  // source on every line) instead, so a profile needs that comment. No
  // description or header comment may be the name plus a digit, as
  // "mixtral-8x7b0" and "fsmoe-testbed-a-gpt2-xl3" were.
  using moeplan::io::FileKind;
  int checked = 0;
  for (const char* folder : {"models", "scenarios", "calibration/profiles"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(MOEPLAN_SOURCE_DIR) / folder)) {
      if (entry.path().extension() != ".textproto") continue;
      const std::string path = entry.path().string();
      INFO(path);
      const FileKind kind = moeplan::io::detect_kind(path);
      const std::unique_ptr<google::protobuf::Message> message = message_of(kind);
      REQUIRE(message);
      const std::string text = read_file(entry.path());
      moeplan::io::parse_text_proto(path, text, *message);
      const google::protobuf::Reflection& reflection = *message->GetReflection();
      const google::protobuf::Descriptor& descriptor = *message->GetDescriptor();
      const std::string name = reflection.GetString(*message, descriptor.FindFieldByName("name"));
      const std::string description = reflection.GetString(*message, descriptor.FindFieldByName("description"));
      const std::string comment = header_comment(text);
      CHECK(name == entry.path().stem().string());
      if (kind == FileKind::Profile)
        CHECK_FALSE(comment.empty());
      else
        CHECK(description.find_first_not_of(' ') != std::string::npos);
      CHECK(description != name);
      CHECK_FALSE(has_name_and_stray_digit(description, name));
      CHECK_FALSE(has_name_and_stray_digit(comment, name));
      ++checked;
    }
  }
  CHECK(checked >= 17 + 6 + 8 + 1);  // models, clusters, profiles, at least the sweep
}

TEST_CASE("io::validate_file accepts every bundled file", "[io][zoo]") {
  int checked = 0;
  for (const char* folder : {"models", "scenarios", "calibration/profiles"}) {
    const fs::path root = fs::path(MOEPLAN_SOURCE_DIR) / folder;
    if (!fs::exists(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (entry.path().extension() != ".textproto") continue;
      INFO(entry.path().string());
      CHECK(error_of(entry.path().string()).empty());
      ++checked;
    }
  }
  CHECK(checked >= 15 + 6 + 1);  // models, clusters, at least the default scenario
}

TEST_CASE("io::validate_file reports each malformed fixture at its file, line and field", "[io]") {
  // tests/data/bad/EXPECTED: "fixture|substring of the one-line error".
  const fs::path bad = fs::path(MOEPLAN_TEST_DATA_DIR) / "bad";
  std::ifstream expected(bad / "EXPECTED");
  REQUIRE(expected);
  int cases = 0;
  for (std::string line; std::getline(expected, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t bar = line.find('|');
    const std::string file = (bad / line.substr(0, bar)).string();
    const std::string message = error_of(file);
    INFO(file << " -> " << message);
    CHECK(message.find(line.substr(bar + 1)) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
    ++cases;
  }
  CHECK(cases >= 12);
}

TEST_CASE("io::load_scenario resolves references and applies overrides", "[io]") {
  const auto s = moeplan::io::load_scenario("foldmoe-gpt-moe-m-16k");
  CHECK(s.model.name == "gpt-moe-m");
  CHECK(s.cluster.world_size() == 16);
  CHECK(s.parallel.dp == 2);   // given
  CHECK(s.parallel.edp == 1);  // derived: 16 / (etp 1 * ep 16 * pp 1)
  CHECK(s.model.moe_layer == std::vector<bool>{false, true, false, true, false, true});

  const auto t = moeplan::io::load_scenario(
      "foldmoe-gpt-moe-m-16k", {{"workload.seq_len", "32768"}, {"model.moe.top_k", "2"}, {"model_ref", "gpt-moe-l"}});
  CHECK(t.workload.seq_len == 32768);
  CHECK(t.model.name == "gpt-moe-l");
  CHECK(t.model.moe.top_k == 2);
}

TEST_CASE("io::load_scenario names a bad override", "[io]") {
  const std::string scenario = "foldmoe-gpt-moe-m-16k";
  CHECK(error_of(scenario, {{"parallelism.tpx", "3"}}) == "--set: parallelism.tpx: unknown field 'tpx' in Parallelism");
  CHECK(error_of(scenario, {{"workload.seq_len", "many"}}) ==
        "--set: workload.seq_len: expected an integer, got 'many'");
  CHECK(error_of(scenario, {{"model.moe.top_k", "17"}}) == "--set: model.moe.top_k: top_k 17 exceeds num_experts 16");
  CHECK(error_of(scenario, {{"parallelism", "3"}}).find("is a message") != std::string::npos);
  CHECK_THROWS_AS(moeplan::io::parse_override("no-equals-sign"), Error);
}

TEST_CASE("io::load_scenario reads a dense model and refuses what cannot act on it", "[io][dense]") {
  const std::string scenario = "folding-llama3-70b-64";
  const auto s = moeplan::io::load_scenario(scenario);
  CHECK(s.model.is_dense());
  CHECK(s.model.num_moe_layers() == 0);
  CHECK(s.model.ffn_hidden == 28672);
  // Megatron's expert mapping of a model without experts: ep 1, etp = tp,
  // edp = world / (etp pp) = 64 / (8 x 4) = 2 = dp x cp.
  CHECK(s.parallel.ep == 1);
  CHECK(s.parallel.etp == 8);
  CHECK(s.parallel.edp == 2);
  CHECK(error_of(scenario, {{"parallelism.ep", "2"}}).find("parallelism.ep: cannot act on this dense model (no moe): ep = 2") !=
        std::string::npos);
  CHECK(error_of(scenario, {{"parallelism.etp", "1"}}).find("parallelism.etp: cannot act on this dense model (no moe): etp = 1 differs from tp = 8") !=
        std::string::npos);
  CHECK(error_of(scenario, {{"workload.routing", "zipf"}, {"workload.routing_zipf_s", "1.2"}})
            .find("workload.routing: cannot act on this") != std::string::npos);
  // The MoE families overlap expert communication: refused by name, not run without it.
  CHECK(error_of(scenario, {{"schedule.family", "foldmoe"}, {"parallelism.pp", "1"}})
            .find("schedule.family: model llama3-70b is dense (no moe)") != std::string::npos);
  // A moe section whose every block is dense is refused: a dense model leaves moe out.
  CHECK(error_of("folding-mixtral-8x22b-128", {{"model.moe.first_k_dense", "56"}})
            .find("no block is an MoE layer (for a dense model leave moe out of the file)") != std::string::npos);
}

TEST_CASE("io::resolve_path prefers files, then bundled names", "[io]") {
  CHECK(moeplan::io::resolve_path(moeplan::io::FileKind::Model, "mixtral-8x7b").find("models/mixtral-8x7b.textproto") !=
        std::string::npos);
  CHECK_THROWS_WITH(moeplan::io::resolve_path(moeplan::io::FileKind::Model, "nope"),
                    Catch::Contains("no bundled model named 'nope'"));
  CHECK_THROWS_WITH(moeplan::io::resolve_path(moeplan::io::FileKind::Model, "dir/nope.textproto"),
                    Catch::Contains("no such file"));
}

TEST_CASE("io::load_scenario resolves references beside the scenario first, from any working directory", "[io]") {
  // A copy of foldmoe-gpt-moe-m-16k in proj/ whose model is proj/local-moe
  // (bare name; 4 experts instead of 16, so the copy is told from the bundled
  // gpt-moe-m) and whose cluster is proj/parts/g5.textproto (a path), loaded
  // from a sibling folder: the old rule looked in the CWD and the bundle only.
  const TempFolder tmp("refs");
  const fs::path proj = tmp.path() / "proj";
  const fs::path src(MOEPLAN_SOURCE_DIR);
  std::string scenario = read_file(src / "scenarios/foldmoe-gpt-moe-m-16k.textproto");
  scenario.replace(scenario.find("model_ref: \"gpt-moe-m\""), 22, "model_ref: \"local-moe\"");
  scenario.replace(scenario.find("cluster_ref: \"foldmoe-g5\""), 25, "cluster_ref: \"parts/g5.textproto\"");
  scenario.replace(scenario.find("ep: 16"), 6, "ep: 4");
  write_file(proj / "s.textproto", scenario);
  std::string model = read_file(src / "models/gpt-moe-m.textproto");
  model.replace(model.find("name: \"gpt-moe-m\""), 17, "name: \"local-moe\"");
  model.replace(model.find("num_experts: 16"), 15, "num_experts: 4");
  write_file(proj / "local-moe.textproto", model);
  write_file(proj / "parts/g5.textproto", read_file(src / "scenarios/clusters/foldmoe-g5.textproto"));
  // A scenario named like the bundled profile it references: passed over as a profile.
  write_file(proj / "foldmoe-g5-datasheet.textproto", scenario);
  fs::create_directories(tmp.path() / "elsewhere");
  const WorkingDirectory cwd(tmp.path() / "elsewhere");

  SECTION("bare name and path beside the scenario, the profile from the bundle") {
    const auto s = moeplan::io::load_scenario("../proj/s.textproto");
    CHECK(s.model.name == "local-moe");
    CHECK(s.model.moe.num_experts == 4);
    CHECK(s.cluster.name == "foldmoe-g5");
    REQUIRE(s.profile);
    CHECK(s.profile->name == "foldmoe-g5-datasheet");
  }
  SECTION("the candidates in order: beside the file, as given, bundled") {
    using moeplan::io::FileKind;
    const std::string from = "../proj/s.textproto";
    CHECK(moeplan::io::resolve_reference_path(FileKind::Model, "local-moe", from) == "../proj/local-moe.textproto");
    CHECK(moeplan::io::resolve_reference_path(FileKind::Model, "gpt-moe-m", from) ==
          (fs::path(moeplan::io::data_root()) / "models/gpt-moe-m.textproto").string());
    CHECK(moeplan::io::resolve_reference_path(FileKind::Model, "local-moe.textproto", from) ==
          "../proj/local-moe.textproto");
    // As given (CWD), for a reference typed on the command line.
    CHECK(moeplan::io::resolve_reference_path(FileKind::Model, "../proj/local-moe.textproto", "") ==
          "../proj/local-moe.textproto");
  }
  SECTION("a missing reference names its field and every path tried") {
    std::string text = scenario;
    text.replace(text.find("parts/g5.textproto"), 18, "parts/none.textproto");
    write_file(proj / "t.textproto", text);
    CHECK(error_of("../proj/t.textproto") ==
          "../proj/t.textproto:11:1: cluster_ref: no cluster named 'parts/none.textproto': tried "
          "../proj/parts/none.textproto, parts/none.textproto");
  }
  SECTION("a sweep's scenarios resolve beside the sweep") {
    write_file(proj / "grid.textproto",
               "# proto-message: Sweep\nname: \"grid\"\nscenarios: \"s\"\n"
               "axes { field: \"workload.seq_len\" values: \"8192\" values: \"16384\" }\n");
    const auto sweep = moeplan::io::load_sweep("../proj/grid.textproto");
    REQUIRE(sweep.size() == 2);
    CHECK(sweep.point(0).scenario == "../proj/s.textproto");
    CHECK(error_of("../proj/grid.textproto").empty());
    CHECK(moeplan::io::load_scenario(sweep.point(1).scenario, sweep.point(1).overrides).model.name == "local-moe");
  }
}

TEST_CASE("io::load_scenario refuses strings that are not UTF-8, in files and in --set", "[io]") {
  // Issue 14: a scenario name with the bytes FF FE was echoed raw into --json
  // output. Protobuf checks UTF-8 only in proto3 files; ours are proto2, so the
  // loader does, naming the field and the first bad byte.
  const TempFolder tmp("utf8");
  const fs::path src(MOEPLAN_SOURCE_DIR);
  const std::string scenario = read_file(src / "scenarios/foldmoe-gpt-moe-m-16k.textproto");
  // The bundled scenario's name and description are on lines 8 and 9 (after the header comments).
  REQUIRE(scenario.find("\nname: \"foldmoe-gpt-moe-m-16k\"") + 1 ==
          scenario.find("name: \"foldmoe-gpt-moe-m-16k\""));
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string text = scenario;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  SECTION("raw bytes in the name") {
    write_file(tmp.path() / "s.textproto", with("name: \"foldmoe-gpt-moe-m-16k\"", "name: \"\xff\xfe\""));
    CHECK(error_of((tmp.path() / "s.textproto").string()) ==
          (tmp.path() / "s.textproto").string() + ":8:1: name: not valid UTF-8 (byte 0xff at offset 0)");
  }
  SECTION("an escaped byte in the description") {
    // Text format escapes decode to bytes: "\xfe" is the byte FE, as bad as the raw byte.
    write_file(tmp.path() / "s.textproto", with("2 x g5.48xlarge\"", "2 x g5.48xlarge \\xfe\""));
    CHECK(error_of((tmp.path() / "s.textproto").string()) ==
          (tmp.path() / "s.textproto").string() + ":9:1: description: not valid UTF-8 (byte 0xfe at offset 49)");
  }
  SECTION("a reference: refused at its line before it is looked up") {
    write_file(tmp.path() / "s.textproto", with("model_ref: \"gpt-moe-m\"", "model_ref: \"gpt-\xc0\xafmoe\""));
    CHECK(error_of((tmp.path() / "s.textproto").string()) ==
          (tmp.path() / "s.textproto").string() + ":10:1: model_ref: not valid UTF-8 (byte 0xc0 at offset 4)");
  }
  SECTION("--set") {
    CHECK(error_of("foldmoe-gpt-moe-m-16k", {{"name", "ok\xed\xa0\x80"}}) ==
          "--set: name: not valid UTF-8 (byte 0xed at offset 2)");
  }
  SECTION("well-formed UTF-8 loads") {
    write_file(tmp.path() / "s.textproto", with("name: \"foldmoe-gpt-moe-m-16k\"", "name: \"gr\xc3\xbc\xc3\x9f \xf0\x9f\x98\x80\""));
    CHECK(moeplan::io::load_scenario((tmp.path() / "s.textproto").string()).name == "gr\xc3\xbc\xc3\x9f \xf0\x9f\x98\x80");
  }
}

TEST_CASE("io::load_model_text reads chunked attention and refuses what it cannot mean", "[io][chunk]") {
  const std::string base =
      "name: \"m\"\nnum_layers: 4\nd_model: 64\nnum_heads: 4\nvocab_size: 100\ndtype_bytes: 2\nffn_hidden: 128\n"
      "ffn_type: SWIGLU\n";
  auto refusal = [&](const std::string& extra) -> std::string {
    try {
      moeplan::io::load_model_text("m.textproto", base + extra);
    } catch (const moeplan::Error& e) {
      return e.field() + ": " + e.reason();
    }
    return "";
  };
  const moeplan::model::ModelSpec m =
      moeplan::io::load_model_text("m.textproto", base + "attention_chunk_size: 16\nattention_chunk_layers: [0, 2]\n");
  CHECK(m.attention_chunk_size == 16);
  CHECK(m.num_chunk_layers() == 2);
  CHECK(m.chunk_layer[2]);
  CHECK_FALSE(m.chunk_layer[1]);
  using Catch::Contains;
  CHECK_THAT(refusal("attention_chunk_size: 16\n"), Contains("attention_chunk_layers") && Contains("required"));
  CHECK_THAT(refusal("attention_chunk_layers: [0]\n"), Contains("attention_chunk_size"));
  CHECK_THAT(refusal("attention_chunk_size: 0\nattention_chunk_layers: [0]\n"), Contains("at least 1 token"));
  CHECK_THAT(refusal("attention_chunk_size: 16\nattention_chunk_layers: [4]\n"),
             Contains("attention_chunk_layers") && Contains("block 4 is not one of the model's 0..3"));
  CHECK_THAT(refusal("attention_chunk_size: 16\nattention_chunk_layers: [1, 1]\n"), Contains("listed twice"));
  // A window and chunks on one block: two masks of its attention.
  CHECK_THAT(refusal("attention_chunk_size: 16\nattention_chunk_layers: [1]\nsliding_window: 8\n"
                     "sliding_window_layers: [1]\n"),
             Contains("attention_chunk_layers") && Contains("block 1 is also in sliding_window_layers"));
  CHECK(refusal("attention_chunk_size: 16\nattention_chunk_layers: [1]\nsliding_window: 8\n"
                "sliding_window_layers: [0]\n")
            .empty());
}
