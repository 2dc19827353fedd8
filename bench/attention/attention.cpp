// scaled_dot_product_attention's forward and forward + backward at B = 4, H = 8, d = 64 (the cases
// of cases.py), timed as a user's program sees them: the median of a few calls after one warm-up.
//
//   attention [--kernel flash|scores] [--max-length T] [--min-seconds s]   prints one JSON object
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <ember/ember.hpp>

namespace {

using Clock = std::chrono::steady_clock;

// Runs f at least three times and for at least min_seconds; the median time in milliseconds.
template <class F>
double median_ms(F&& f, double min_seconds) {
  f();  // warm-up: the allocator's cache, the threads
  std::vector<double> ms;
  const auto start = Clock::now();
  while (ms.size() < 3 || std::chrono::duration<double>(Clock::now() - start).count() < min_seconds) {
    const auto t0 = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

template <class T>
void run(const char* dtype, std::int64_t T_len, bool causal, ember::AttentionKernel kernel,
         double min_seconds, std::string& json) {
  constexpr std::int64_t B = 4, H = 8, D = 64;
  const ember::Shape shape{B, H, T_len, D};
  const ember::Tensor<T> q = ember::randn<T>(shape, 1), k = ember::randn<T>(shape, 2),
                         v = ember::randn<T>(shape, 3), g = ember::randn<T>(shape, 4);
  ember::AttentionOptions opt;
  opt.causal = causal;
  opt.kernel = kernel;
  const double fwd = median_ms(
      [&] { (void)ember::scaled_dot_product_attention<T>(q, k, v, {}, opt); },
      min_seconds);
  const double fwd_bwd = median_ms(
      [&] {
        auto qv = ember::param(q), kv = ember::param(k), vv = ember::param(v);
        ember::scaled_dot_product_attention<T>(qv, kv, vv, {}, opt).backward(g);
      },
      min_seconds);
  for (const auto& [passes, ms] : {std::pair{"fwd", fwd}, std::pair{"fwd_bwd", fwd_bwd}}) {
    char line[160];
    std::snprintf(line, sizeof line, "%s\"%s/T%lld/causal%d/%s\": %.3f", json.size() > 1 ? ", " : "",
                  dtype, static_cast<long long>(T_len), causal ? 1 : 0, passes, ms);
    json += line;
  }
}

}  // namespace

int main(int argc, char** argv) {
  ember::AttentionKernel kernel = ember::AttentionKernel::automatic;
  std::int64_t max_length = 4096;
  double min_seconds = 1.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i], value = argv[i + 1];
    if (flag == "--kernel" && (value == "flash" || value == "scores")) {
      kernel = value == "flash" ? ember::AttentionKernel::flash : ember::AttentionKernel::scores;
    } else if (flag == "--max-length") {
      max_length = std::atoll(argv[i + 1]);
    } else if (flag == "--min-seconds") {
      min_seconds = std::atof(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: attention [--kernel flash|scores] [--max-length T] "
                           "[--min-seconds s]\n");
      return 2;
    }
  }
  std::string json = "{";
  for (const std::int64_t t : {512, 1024, 2048, 4096}) {
    if (t > max_length) continue;
    for (const bool causal : {false, true}) run<float>("f32", t, causal, kernel, min_seconds, json);
  }
  for (const std::int64_t t : {512, 1024, 2048, 4096}) {
    if (t > max_length) continue;
    for (const bool causal : {false, true}) {
      run<ember::bf16>("bf16", t, causal, kernel, min_seconds, json);
    }
  }
  std::printf("%s}\n", json.c_str());
}
