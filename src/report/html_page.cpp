// The report's HTML document: data, script and style in one file, which no
// browser needs a network for (the Content-Security-Policy forbids fetching).

#include <algorithm>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/output/timeline_writer.hpp>
#include <moeplan/report/html_report.hpp>

#include "assets.hpp"

namespace moeplan::report {
namespace {

// Nothing may fetch: scripts and styles are the inline ones, images only data: URLs (screenshots of canvases).
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";

// JSON inside a script element: '<' only occurs in strings, where \u003c
// reads the same, and without it no "</script>" in a name can end the element.
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

// An asset must not end its own element early.
bool contains_closing_tag(std::string_view text, std::string_view tag) {
  for (std::size_t at = text.find("</"); at != std::string_view::npos; at = text.find("</", at + 2)) {
    const std::string_view rest = text.substr(at + 2, tag.size());
    if (rest.size() == tag.size() &&
        std::equal(rest.begin(), rest.end(), tag.begin(), [](char a, char b) { return (a | 0x20) == b; }))
      return true;
  }
  return false;
}

}  // namespace

std::string html_page(const io::Json& data, const std::string& title) {
  const std::string_view js = assets::report_js();
  const std::string_view css = assets::report_css();
  MOEPLAN_CHECK(!contains_closing_tag(js, "script") && !contains_closing_tag(css, "style"),
                "the report's assets do not close their own elements");
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{}</title>\n<style>\n{}</style>\n</head>\n<body>\n"
      "<main id=\"report\"><noscript>This report draws its charts with JavaScript; the data is in the "
      "moeplan-data element of this file.</noscript></main>\n"
      "<script type=\"application/json\" id=\"moeplan-data\">{}</script>\n"
      "<script>\n{}</script>\n</body>\n</html>\n",
      kContentSecurityPolicy, output::xml_escape(title), css, script_safe(data.dump(0)), js);
}

}  // namespace moeplan::report
