#pragma once
// The report page's script and style (src/report/assets/report.js and
// report.css), embedded at build time by cmake/embed_asset.cmake.

#include <string_view>

namespace moeplan::report::assets {

std::string_view report_js();
std::string_view report_css();

}  // namespace moeplan::report::assets
