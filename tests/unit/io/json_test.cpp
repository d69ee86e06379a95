#include <catch2/catch.hpp>

#include <limits>
#include <string>

#include <moeplan/core/error.hpp>
#include <moeplan/io/json.hpp>

using moeplan::io::Json;

TEST_CASE("io::Json writes deterministic, valid JSON", "[io]") {
  Json doc = Json::object();
  doc.set("name", "a \"quoted\"\nline");
  doc.set("ms", 0.1);
  doc.set("count", std::int64_t{3});
  doc.set("nan", std::numeric_limits<double>::quiet_NaN());
  doc.set("list", Json(Json::Array{Json(1), Json(true), Json(nullptr)}));
  doc.set("count", std::int64_t{4});  // replaces, keeps position
  // Shortest round-trip doubles; NaN has no JSON form and becomes null.
  CHECK(doc.dump(0) == R"({"name":"a \"quoted\"\nline","ms":0.1,"count":4,"nan":null,"list":[1,true,null]})");
}

TEST_CASE("io::Json parses what it writes", "[io]") {
  Json doc = Json::object();
  doc.set("x", 1.5e-9);
  doc.set("s", "tab\there \\ \u00e9");
  doc.set("a", Json(Json::Array{Json(-2), Json(Json::object())}));
  const Json back = Json::parse(doc.dump());
  CHECK(back.dump() == doc.dump());
  CHECK(back.find("x")->as_number() == 1.5e-9);
  CHECK(back.find("s")->as_string() == "tab\there \\ \u00e9");
}

TEST_CASE("io::Json rejects malformed documents", "[io]") {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "tru", "\"unterminated", "[1] 2", "{\"a\":01x}"}) {
    INFO(bad);
    CHECK_THROWS_AS(Json::parse(bad), moeplan::Error);
  }
  CHECK_THROWS_AS(Json::parse(std::string(10000, '[')), moeplan::Error);  // depth bound, no stack overflow
}

TEST_CASE("io::Json refuses numbers beyond the double range", "[io]") {
  // Found by fuzz_json: 9223372036854771e308 read as infinity, which dump() writes as null.
  CHECK_THROWS_WITH(Json::parse("[9223372036854771e308]"), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(Json::parse("-1e309"), Catch::Contains("out of range"));
  CHECK(Json::parse("1e-400").as_number() == 0.0);  // underflow to zero is still the nearest double
}

TEST_CASE("io::Json reads integers beyond int64 as doubles", "[io]") {
  // strtoll saturates: 2^64 read as the integer 2^63 - 1 before.
  CHECK(Json::parse("18446744073709551616").as_number() == 18446744073709551616.0);
  CHECK(Json::parse("-18446744073709551616").as_number() == -18446744073709551616.0);
  CHECK(Json::parse("9223372036854775807").dump() == "9223372036854775807");
}

TEST_CASE("io::Json writes negative zero as 0, so that a dump parses back to the same text", "[io]") {
  // Found by fuzz_json: -0.69e-324 underflows to -0.0, which was written "-0";
  // "-0" reads back as the integer 0, which is written "0": the second dump differed.
  CHECK(Json::parse("-0.6931345e-324").dump() == "0");
  CHECK(Json(-0.0).dump() == "0");
  const std::string once = Json::parse("[-1e-400, -0, 0.0]").dump(0);
  CHECK(once == "[0,0,0]");
  CHECK(Json::parse(once).dump(0) == once);
}

TEST_CASE("io::json_quote escapes controls and never writes invalid UTF-8", "[io]") {
  using moeplan::io::json_quote;
  // RFC 8259: C0 controls escaped (DEL too); well-formed UTF-8 kept as it is.
  CHECK(json_quote("a\x01z\x7f") == R"("a\u0001z\u007f")");
  CHECK(json_quote("\xc3\xa9 \xf0\x9f\x98\x80") == "\"\xc3\xa9 \xf0\x9f\x98\x80\"");  // é and U+1F600
  // Each byte that starts no well-formed sequence (RFC 3629) becomes U+FFFD:
  // the scenario name of issue 14, a truncated sequence, an overlong '/', a
  // UTF-16 surrogate (ED A0 80) and a code point above U+10FFFF (F4 90 80 80).
  CHECK(json_quote("\xff\xfe") == R"("\ufffd\ufffd")");
  CHECK(json_quote("x\xe2\x82") == R"("x\ufffd\ufffd")");
  CHECK(json_quote("\xc0\xaf") == R"("\ufffd\ufffd")");
  CHECK(json_quote("\xed\xa0\x80") == R"("\ufffd\ufffd\ufffd")");
  CHECK(json_quote("\xf4\x90\x80\x80") == R"("\ufffd\ufffd\ufffd\ufffd")");
  CHECK(json_quote("\xf4\x8f\xbf\xbf") == "\"\xf4\x8f\xbf\xbf\"");  // U+10FFFF, the last code point
}

TEST_CASE("io::Json reads a surrogate pair as one code point", "[io]") {
  // U+1F600 is written \ud83d\ude00 in JSON and F0 9F 98 80 in UTF-8; a lone
  // surrogate is no character and reads as U+FFFD (EF BF BD).
  CHECK(Json::parse(R"("\ud83d\ude00")").as_string() == "\xf0\x9f\x98\x80");
  CHECK(Json::parse(R"("\ud800x")").as_string() == "\xef\xbf\xbdx");
  CHECK(Json::parse(R"("\ud800\u0041")").as_string() == "\xef\xbf\xbd" "A");
}

TEST_CASE("io::Json refuses strings that are not UTF-8", "[io]") {
  // Found by fuzz_json (CI): the lone byte 0xe7 was accepted and dumped as
  // \ufffd, so the value read back differed from the value parsed.
  CHECK_THROWS_WITH(Json::parse("\"a\xe7lane\""), Catch::Contains("not valid UTF-8 (byte 0xe7 at offset 2)"));
  CHECK_THROWS_WITH(Json::parse("[\"\xc0\xaf\"]"), Catch::Contains("not valid UTF-8"));  // overlong '/'
  // Well-formed multi-byte text is kept byte for byte: U+00E9 (2 bytes), U+20AC (3), U+1F600 (4).
  const std::string text = "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"";
  CHECK(Json::parse(text).as_string() == text.substr(1, text.size() - 2));
  CHECK(Json::parse(text).dump() == text);
}

namespace {

// The error Json::parse throws for text said to come from "f.json".
moeplan::Error parse_error(const std::string& text) {
  try {
    Json::parse(text, "f.json");
  } catch (const moeplan::Error& e) {
    return e;
  }
  FAIL("parsed: " << text);
  return moeplan::Error(moeplan::ErrorKind::Runtime, "");
}

}  // namespace

TEST_CASE("io::Json refuses numbers outside RFC 8259's grammar, at their line and column", "[io]") {
  // -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?: strtod took +1, 01, 1. and .5.
  // Each sits after `{\n  "a": ` (10 bytes), so at line 2, column 8.
  struct Case {
    const char* number;
    const char* reason;
  };
  for (const Case& c :
       {Case{"+1", "malformed number '+1': a number starts with '-' or a digit"},
        Case{"01", "malformed number '01': no leading zeros"}, Case{"-01", "malformed number '-01': no leading zeros"},
        Case{"1.", "malformed number '1.': a digit must follow '.'"},
        Case{"1.e5", "malformed number '1.e5': a digit must follow '.'"},
        Case{".5", "malformed number '.5': a number starts with '-' or a digit"},
        Case{"-", "malformed number '-': a digit must follow '-'"},
        Case{"--1", "malformed number '--1': a digit must follow '-'"},
        Case{"1e", "malformed number '1e': a digit must follow the exponent's 'e'"},
        Case{"1e+", "malformed number '1e+': a digit must follow the exponent's 'e'"},
        Case{"0x10", "malformed number '0x10': not a JSON number (RFC 8259)"},
        Case{"1.5.3", "malformed number '1.5.3': not a JSON number (RFC 8259)"}, Case{"Infinity", "expected a value"},
        Case{"NaN", "expected a value"}, Case{"-Infinity", "malformed number '-Infinity': a digit must follow '-'"}}) {
    INFO(c.number);
    const moeplan::Error e = parse_error(std::string("{\n  \"a\": ") + c.number + "\n}");
    CHECK(e.kind() == moeplan::ErrorKind::Input);
    CHECK(e.reason() == std::string("invalid JSON: ") + c.reason);
    CHECK(moeplan::format_error(e) == std::string("f.json:2:8: invalid JSON: ") + c.reason);
  }
  // What the grammar allows still reads: integers, fractions, exponents either case and sign.
  CHECK(Json::parse("[0, -0, 10, -2.5, 1e3, 1E-3, 2.5e+2]").dump(0) == "[0,0,10,-2.5,1000,0.001,250]");
}

TEST_CASE("io::Json refuses a number that overflows to infinity, at its line and column", "[io]") {
  // 1e400 is past DBL_MAX (about 1.8e308); a third line, after "[1,\n2,\n" (6 bytes).
  CHECK(moeplan::format_error(parse_error("[1,\n2,\n1e400]")) ==
        "f.json:3:1: invalid JSON: number '1e400' out of range");
  CHECK(moeplan::format_error(parse_error("[-1e400]")) == "f.json:1:2: invalid JSON: number '-1e400' out of range");
}

TEST_CASE("io::Json places every syntax error at its line and column", "[io]") {
  // Line 3 is `  "b" 2`: the ':' was expected at its 7th byte, after `  "b" `.
  CHECK(moeplan::format_error(parse_error("{\n  \"a\": 1,\n  \"b\" 2\n}")) == "f.json:3:7: invalid JSON: expected ':'");
  // The lone 0xe7 is the file's 3rd byte, on line 1.
  CHECK(moeplan::format_error(parse_error("\"a\xe7lane\"")) ==
        "f.json:1:3: invalid JSON: not valid UTF-8 (byte 0xe7 at offset 2)");
}

TEST_CASE("io::Json keeps a key written twice in its first place with its last value", "[io]") {
  // As Python's json.loads('{"a": 1, "b": 2, "a": 3}') == {"a": 3, "b": 2}.
  CHECK(Json::parse(R"({"a": 1, "b": 2, "a": 3})").dump(0) == R"({"a":3,"b":2})");
  // The same in an object past the size where keys are indexed (16 members).
  std::string text = "{";
  for (int k = 0; k < 40; ++k) text += "\"k" + std::to_string(k) + "\": " + std::to_string(k) + ", ";
  text += "\"k7\": -7, \"k30\": -30}";
  const Json doc = Json::parse(text);
  REQUIRE(doc.as_object().size() == 40);
  CHECK(doc.as_object()[7].first == "k7");
  CHECK(doc.find("k7")->as_number() == -7);
  CHECK(doc.as_object()[30].second.as_number() == -30);
}

TEST_CASE("io::Json parses an object of 250,000 keys in order and finds each by key", "[io]") {
  // Issue 28: each key was compared with every earlier one (250,000 keys took
  // minutes). The document is built as import-hf's and import-chakra's files were.
  constexpr int kKeys = 250000;
  std::string text = "{";
  for (int k = 0; k < kKeys; ++k)
    text += (k > 0 ? ",\"g" : "\"g") + std::to_string(k) + "\":[" + std::to_string(k % 7) + "]";
  text += "}";
  const Json doc = Json::parse(text);
  const Json::Object& members = doc.as_object();
  REQUIRE(members.size() == kKeys);
  bool in_order = true, found = true;
  for (int k = 0; k < kKeys; ++k) {
    const std::string key = "g" + std::to_string(k);
    in_order = in_order && members[static_cast<std::size_t>(k)].first == key;
    const Json* v = doc.find(key);
    found = found && v != nullptr && v->as_array()[0].as_number() == k % 7;
  }
  CHECK(in_order);
  CHECK(found);
  CHECK(doc.find("g250000") == nullptr);
  // A copy keeps its own index: setting a key of the copy leaves the original as it was.
  Json copy = doc;
  copy.set("g5", Json(-1));
  copy.set("new", Json(1));
  CHECK(copy.find("g5")->as_number() == -1);
  CHECK(doc.find("g5")->as_array()[0].as_number() == 5);
  CHECK(copy.as_object().size() == kKeys + 1);
  CHECK(doc.find("new") == nullptr);
}

TEST_CASE("io::Json refuses a document of more values than its bound, while reading it", "[io]") {
  // Every value counts, nested ones and the document too: [1,[2,3]] holds 5.
  CHECK(Json::parse("[1,[2,3]]", "", 5).dump(0) == "[1,[2,3]]");
  // The 6th value, `4`, the 10th byte, is refused before it is made.
  CHECK(moeplan::format_error([] {
          try {
            Json::parse("[1,[2,3],4]", "f.json", 5);
          } catch (const moeplan::Error& e) {
            return e;
          }
          return moeplan::Error(moeplan::ErrorKind::Runtime, "parsed");
        }()) ==
        "f.json:1:10: invalid JSON: more than 5 values (object members and array elements), the limit of a JSON "
        "document");
  // Object members count as values, their keys not: {"a":1,"b":2} holds 3.
  CHECK_NOTHROW(Json::parse(R"({"a":1,"b":2})", "", 3));
  CHECK_THROWS_WITH(Json::parse(R"({"a":1,"b":2})", "", 2), Catch::Contains("more than 2 values"));
  // The default: 2^23 = 8388608 values, documented in docs/reliability.md.
  CHECK(moeplan::io::kMaxJsonValues == 8388608);
}
