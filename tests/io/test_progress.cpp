// The progress bar, driven by an injected clock (no sleeps): the plain-line format and when lines
// are printed, the rate and ETA arithmetic, duration formatting, and the terminal mode's
// throttled in-place redraw.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <ember/io/progress.hpp>
#include <sstream>
#include <string>
#include <vector>

using namespace ember;
using Catch::Matchers::Contains;

namespace {
namespace test_io_progress {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A clock the test moves by hand.
struct FakeClock {
  double now = 1000.0;  // not zero: the bar must measure from its own start
  std::function<double()> fn() {
    return [this] { return now; };
  }
};

io::ProgressOptions plain_options(FakeClock& clock) {
  io::ProgressOptions o;
  o.terminal = false;
  o.clock = clock.fn();
  return o;
}

TEST_CASE("plain mode prints a line every 10% and a final line", "[io]") {
  FakeClock clock;
  std::ostringstream os;
  {
    io::ProgressBar bar(100, "train", os, plain_options(clock));
    CHECK_FALSE(bar.terminal());
    for (int step = 1; step <= 100; ++step) {
      clock.now = 1000.0 + 0.5 * step;  // 2 steps per second
      bar.update(step, {{"loss", 1.0 / step}, {"acc", 0.5}});
    }
  }
  const auto lines = lines_of(os.str());
  REQUIRE(lines.size() == 10);  // 10%, 20%, ..., 90%, and the final line at 100%
  CHECK(lines[0] == "train  10/100  10%  2.00 it/s  elapsed 0:05  eta 0:45  loss=0.1 acc=0.5");
  CHECK(lines[1] == "train  20/100  20%  2.00 it/s  elapsed 0:10  eta 0:40  loss=0.05 acc=0.5");
  CHECK(lines[8] == "train  90/100  90%  2.00 it/s  elapsed 0:45  eta 0:05  loss=0.01111 acc=0.5");
  CHECK(lines[9] == "train 100/100 100%  2.00 it/s  elapsed 0:50  done  loss=0.01 acc=0.5");
  CHECK(os.str().find('\r') == std::string::npos);
}

TEST_CASE("plain mode also prints every 30 s when the percentage moves slowly", "[io]") {
  FakeClock clock;
  std::ostringstream os;
  io::ProgressBar bar(1'000'000, "", os, plain_options(clock));
  for (int step = 1; step <= 8000; ++step) {
    clock.now = 1000.0 + step / 128.0;  // 128 it/s (exact in binary): 10% takes 781.25 s
    bar.update(step);
  }
  const auto lines = lines_of(os.str());
  REQUIRE(lines.size() == 2);  // at 30 s (step 3840) and 60 s (step 7680)
  // ETA: (1000000 - 3840) / 128 = 7782.5 s, rounded to 7783 s.
  CHECK(lines[0] == "   3840/1000000   0%  128 it/s  elapsed 0:30  eta 2:09:43");
  CHECK_THAT(lines[1], Contains("7680/1000000") && Contains("elapsed 1:00"));
  // An explicit finish prints the final line once, with the metrics given.
  bar.finish({{"loss", 0.25}});
  bar.finish();
  bar.update(7000);
  const auto after = lines_of(os.str());
  REQUIRE(after.size() == 3);
  CHECK(after[2] == "   8000/1000000   0%  128 it/s  elapsed 1:03  done  loss=0.25");
}

TEST_CASE("rate and ETA arithmetic", "[io]") {
  FakeClock clock;
  std::ostringstream os;
  io::ProgressBar bar(1000, "x", os, plain_options(clock));
  CHECK_FALSE(bar.rate().has_value());  // no time has passed
  CHECK_FALSE(bar.eta().has_value());
  clock.now += 10.0;
  bar.update(250);
  CHECK(bar.elapsed() == 10.0);
  CHECK(*bar.rate() == 25.0);
  CHECK(*bar.eta() == 30.0);  // 750 steps left at 25 it/s
  CHECK(bar.status() == "x  250/1000  25%  25.0 it/s  elapsed 0:10  eta 0:30");
  clock.now += 30.0;  // no update: the rate falls as time passes
  CHECK(*bar.rate() == 6.25);
  CHECK(*bar.eta() == 120.0);

  SECTION("a resumed run counts the rate from its initial step") {
    io::ProgressOptions o = plain_options(clock);
    o.initial = 500;
    io::ProgressBar resumed(1000, "r", os, o);
    clock.now += 10.0;
    resumed.update(600);
    CHECK(*resumed.rate() == 10.0);
    CHECK(*resumed.eta() == 40.0);
  }
  SECTION("an unknown total has no percentage and no ETA") {
    std::ostringstream os2;
    io::ProgressBar open(0, "eval", os2, plain_options(clock));
    clock.now += 4.0;
    open.update(10);
    CHECK_FALSE(open.eta().has_value());
    CHECK(open.status() == "eval 10  2.50 it/s  elapsed 0:04");
    CHECK(os2.str().empty());
    clock.now += 30.0;
    open.update(20);
    CHECK(os2.str() == "eval 20  0.59 it/s  elapsed 0:34\n");
    open.finish();
    CHECK(lines_of(os2.str()).back() == "eval 20  0.59 it/s  elapsed 0:34  done");
  }
}

TEST_CASE("durations, rates and metrics format compactly", "[io]") {
  using B = io::ProgressBar;
  CHECK(B::format_duration(0) == "0:00");
  CHECK(B::format_duration(59.4) == "0:59");
  CHECK(B::format_duration(59.5) == "1:00");
  CHECK(B::format_duration(605) == "10:05");
  CHECK(B::format_duration(3725) == "1:02:05");
  CHECK(B::format_duration(-1) == "?");
  CHECK(B::format_rate(1234.4) == "1234");
  CHECK(B::format_rate(25) == "25.0");
  CHECK(B::format_rate(0.25) == "0.25");
  CHECK(B::format_metric(0.31) == "0.31");
  CHECK(B::format_metric(0.123456) == "0.1235");
  CHECK(B::format_metric(12345.6) == "1.235e+04");
}

TEST_CASE("terminal mode redraws one line at most 10 times a second", "[io]") {
  FakeClock clock;
  std::ostringstream os;
  io::ProgressOptions o;
  o.terminal = true;
  o.clock = clock.fn();
  o.bar_width = 10;
  {
    io::ProgressBar bar(20, "fit", os, o);
    CHECK(bar.terminal());
    for (int step = 1; step <= 20; ++step) {
      clock.now += 0.03;  // a redraw every 4th step (0.12 s)
      bar.update(step, {{"loss", step == 1 ? 123.456 : 0.5}});
    }
  }
  const std::string out = os.str();
  // Draws at steps 1, 5, 9, 13, 17 (0.12 s apart) and the final one at 20.
  CHECK(std::count(out.begin(), out.end(), '\r') == 6);
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  CHECK(out.back() == '\n');
  CHECK_THAT(out, Contains("\rfit  1/20   5% [..........]  33.3 it/s  elapsed 0:00  eta 0:01  "
                           "loss=123.5"));
  // Step 5's line is shorter than step 1's: spaces erase the rest of the old line.
  CHECK_THAT(out, Contains("\rfit  5/20  25% [##........]  33.3 it/s  elapsed 0:00  eta 0:00  "
                           "loss=0.5  \r"));
  CHECK_THAT(out, Contains("\rfit 20/20 100% [##########]  33.3 it/s  elapsed 0:01  done  "
                           "loss=0.5"));
}

TEST_CASE("an unfinished terminal bar ends its line when destroyed", "[io]") {
  FakeClock clock;
  std::ostringstream os;
  io::ProgressOptions o;
  o.terminal = true;
  o.clock = clock.fn();
  {
    io::ProgressBar bar(100, "a", os, o);
    clock.now += 1;
    bar.update(3);
  }
  const std::string out = os.str();
  CHECK(out.front() == '\r');
  CHECK(out.back() == '\n');
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
}

TEST_CASE("a stream other than std::cerr and std::cout is not a terminal", "[io]") {
  std::ostringstream os;
  io::ProgressBar bar(10, "s", os);
  CHECK_FALSE(bar.terminal());
  io::ProgressOptions bad;
  bad.log_percent = 0;
  CHECK_THROWS_WITH(io::ProgressBar(10, "s", os, bad), Contains("log_percent must be in [1, 100]"));
}

}  // namespace test_io_progress
}  // namespace
