#include <catch2/catch.hpp>

#include <limits>

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
