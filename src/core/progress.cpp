#include <moeplan/core/progress.hpp>

#include <ostream>

#include <fmt/format.h>

namespace moeplan {

ProgressBar::ProgressBar(std::string label, std::ostream& out) : label_(std::move(label)), out_(out) {}

ProgressBar::~ProgressBar() {
  std::lock_guard lock(mutex_);
  if (visible_) out_ << "\r\x1b[K" << std::flush;  // erase the bar: what follows starts on a clean line
}

void ProgressBar::add_total(std::size_t jobs) {
  std::lock_guard lock(mutex_);
  total_ += jobs;
  draw(false);
}

void ProgressBar::advance(std::size_t jobs) {
  std::lock_guard lock(mutex_);
  done_ += jobs;
  draw(done_ == total_);
}

std::string ProgressBar::line(double elapsed_s) const {
  const double rate = elapsed_s > 0 ? static_cast<double>(done_) / elapsed_s : 0.0;
  std::string text = fmt::format("{}: {}/{}", label_, done_, total_);
  if (total_ > 0) text += fmt::format(" ({:.0f}%)", 100.0 * static_cast<double>(done_) / static_cast<double>(total_));
  if (rate > 0) {
    text += fmt::format(" {:.1f}/s", rate);
    if (total_ > done_) text += fmt::format(", ETA {:.1f} s", static_cast<double>(total_ - done_) / rate);
  }
  return text;
}

void ProgressBar::draw(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && visible_ && now - drawn_ < std::chrono::milliseconds(100)) return;
  drawn_ = now;
  visible_ = true;
  out_ << "\r\x1b[K" << line(std::chrono::duration<double>(now - start_).count()) << std::flush;
}

}  // namespace moeplan
