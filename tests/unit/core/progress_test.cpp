#include <catch2/catch.hpp>

#include <sstream>
#include <thread>
#include <vector>

#include <moeplan/core/parallel.hpp>
#include <moeplan/core/progress.hpp>

using namespace moeplan;

TEST_CASE("ProgressBar says done/total, percent, rate and ETA", "[core][progress]") {
  std::ostringstream out;
  ProgressBar bar("plan", out);
  bar.add_total(400);
  bar.add_total(80);  // a search may announce its work in parts: 480 in all
  bar.advance(100);
  bar.advance(20);
  // 120 of 480 done in 2 s: 25%, 60.0 per second, 360 left / 60 = 6.0 s.
  CHECK(bar.line(2.0) == "plan: 120/480 (25%) 60.0/s, ETA 6.0 s");
  bar.advance(360);
  CHECK(bar.line(8.0) == "plan: 480/480 (100%) 60.0/s");  // done: no ETA
  CHECK(out.str().find("plan: 0/400 (0%)") != std::string::npos);  // the first draw
}

TEST_CASE("ProgressBar counts every job reported from many threads, and erases itself", "[core][progress]") {
  std::ostringstream out;
  {
    ProgressBar bar("sweep", out);
    bar.add_total(1000);
    parallel_for(1000, 4, [&](std::size_t) { bar.advance(); });
    CHECK(bar.line(1.0).rfind("sweep: 1000/1000 (100%)", 0) == 0);
  }
  const std::string text = out.str();
  CHECK(text.size() >= 4);
  CHECK(text.substr(text.size() - 4) == "\r\x1b[K");  // the last thing written clears the line
}
