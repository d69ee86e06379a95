# Turns a text asset (the report's script or style) into a C++ source that
# returns its bytes, so that the asset stays a readable file in the source tree
# and the report needs nothing beside the moeplan binary.
# Usage: cmake -DINPUT=report.js -DOUTPUT=report_js.cpp -DNAME=report_js -P embed_asset.cmake
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# A line break every 24 bytes keeps the generated file readable in a diff tool.
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_asset.cmake: edit the asset, not this file.\n"
  "#include <string_view>\n\n"
  "namespace moeplan::report::assets {\n"
  "namespace {\n"
  "// The asset's bytes and a terminating zero (an empty asset still makes an array).\n"
  "constexpr unsigned char kBytes[] = {\n${bytes}0x00};\n"
  "}  // namespace\n\n"
  "std::string_view ${NAME}() { return {reinterpret_cast<const char*>(kBytes), sizeof kBytes - 1}; }\n\n"
  "}  // namespace moeplan::report::assets\n")
# Only a changed asset touches the output, so an unchanged one recompiles nothing.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
