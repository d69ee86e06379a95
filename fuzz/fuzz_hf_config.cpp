// libFuzzer target: io::import_hf_config_text (`moeplan import-hf`). The bytes
// are a config.json; whatever it accepts must be a model the loader accepts
// again from the text written, with the same parameter count.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include <fmt/format.h>

#include <moeplan/io/hf_config.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/model/model_stats.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::optional<moeplan::io::HfImport> imported;
  moeplan::io::HfImportOptions options;
  options.drop_mtp = size > 0 && (data[0] & 1) != 0;  // either answer to an MTP module, by the first byte's parity
  moeplan::fuzz::expect_input_errors_only([&] { imported = moeplan::io::import_hf_config_text("config.json", text, options); });
  if (!imported) return 0;
  // An Error here escapes: the importer wrote a model the loader refuses.
  const moeplan::model::ModelSpec again = moeplan::io::load_model_text("model.textproto", imported->text);
  if (moeplan::model::count_params(again).total != moeplan::model::count_params(imported->model).total) {
    fmt::print(stderr, "moeplan fuzz: the imported model reads back with another parameter count:\n{}\n",
               imported->text);
    std::abort();
  }
  return 0;
}
