// The unit tests' main: Catch2's, with the bundled families registered first
// (family/builtin.hpp), as every program of moeplan starts.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <moeplan/family/builtin.hpp>

int main(int argc, char** argv) {
  moeplan::family::register_builtin_families();
  return Catch::Session().run(argc, argv);
}
