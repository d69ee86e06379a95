#include <catch2/catch.hpp>

#include "proto_text.hpp"

using moeplan::io::enclosing_field_path;

TEST_CASE("io::enclosing_field_path follows braces to the field being written", "[io]") {
  const std::string text =
      "name: \"x\"\n"         // line 0
      "moe {\n"               // line 1
      "  top_k 2\n"           // line 2: missing colon, error at column 8
      "  expert_type: BAD\n"  // line 3
      "}\n"                   // line 4
      "d_model: 5\n";         // line 5
  // At "2" on line 2 the parser is inside moe, writing top_k.
  CHECK(enclosing_field_path(text, 2, 8) == "moe.top_k");
  // After an enum value on line 3, still in moe.expert_type.
  CHECK(enclosing_field_path(text, 3, 19) == "moe.expert_type");
  // After the closing brace, back at top level.
  CHECK(enclosing_field_path(text, 5, 9) == "d_model");
  CHECK(enclosing_field_path(text, 0, 0).empty());
}

TEST_CASE("io::LocationIndex finds the longest written prefix", "[io]") {
  moeplan::io::LocationIndex index("f.textproto");
  index.add("moe", 3, 1);
  index.add("moe.top_k", 4, 3);
  CHECK(index.find("moe.top_k").line == 4);
  CHECK(index.find("moe.num_experts").line == 3);  // not written: point at its block
  CHECK(index.find("costs[2].alpha_ms").line == 0);
  CHECK(index.find("costs[2].alpha_ms").file == "f.textproto");
}
