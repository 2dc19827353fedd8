// oneDNN's convolution primitives alone (forward training, input gradient, weight gradient) on
// the ResNet shapes of issue 49, float, NHWC activations, weights in the primitive's own format,
// median of 25 runs each: bench/onednn_versions.sh builds it against Debian's oneDNN 2.6 and
// against PyPI's onednn-cpu-gomp (oneDNN 3.2 on GNU OpenMP) to compare the two versions' kernels.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unordered_map>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
struct Shape {
  const char* name;
  int N, C, K, H, R, S;
};
double median_ms(stream& s, primitive& p, const std::unordered_map<int, memory>& args) {
  std::vector<double> t;
  for (int i = 0; i < 25; ++i) {
    auto a = std::chrono::steady_clock::now();
    p.execute(s, args);
    s.wait();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
int main() {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const Shape shapes[] = {
      {"r18-48 3x3 64 48x48 b32", 32, 64, 64, 48, 3, 1},
      {"r18-48 3x3 128 24x24 b32", 32, 128, 128, 24, 3, 1},
      {"r18-48 3x3 256 12x12 b32", 32, 256, 256, 12, 3, 1},
      {"r18-48 3x3 512 6x6 b32", 32, 512, 512, 6, 3, 1},
      {"r50-128 1x1 64->256 32x32 b8", 8, 64, 256, 32, 1, 1},
      {"r50-128 3x3 64 32x32 b8", 8, 64, 64, 32, 3, 1},
      {"r50-128 1x1 256->64 32x32 b8", 8, 256, 64, 32, 1, 1},
      {"r50-128 3x3 128 16x16 b8", 8, 128, 128, 16, 3, 1},
      {"r50-128 3x3 256 8x8 b8", 8, 256, 256, 8, 3, 1},
      {"r50-128 1x1 1024->256 8x8 b8", 8, 1024, 256, 8, 1, 1},
  };
  std::printf("oneDNN %d.%d\n", DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR);
  double total[3] = {0, 0, 0};
  for (const Shape& sh : shapes) {
    const int pad = sh.R / 2;
    memory::dims src{sh.N, sh.C, sh.H, sh.H}, wei{sh.K, sh.C, sh.R, sh.R},
        dst{sh.N, sh.K, sh.H, sh.H};
    memory::desc src_md(src, dt::f32, tag::nhwc), dst_md(dst, dt::f32, tag::nhwc);
    memory::desc wei_any(wei, dt::f32, tag::any);
    memory::dims st{1, 1}, pl{pad, pad}, pr{pad, pad};
#if DNNL_VERSION_MAJOR >= 3
    convolution_forward::primitive_desc fpd(eng, prop_kind::forward_training,
                                            algorithm::convolution_direct, src_md, wei_any, dst_md,
                                            st, pl, pr);
    convolution_backward_data::primitive_desc bdpd(eng, algorithm::convolution_direct, src_md,
                                                   wei_any, dst_md, st, pl, pr, fpd);
    convolution_backward_weights::primitive_desc bwpd(eng, algorithm::convolution_direct, src_md,
                                                      wei_any, dst_md, st, pl, pr, fpd);
#else
    convolution_forward::primitive_desc fpd(
        {prop_kind::forward_training, algorithm::convolution_direct, src_md, wei_any, dst_md, st,
         pl, pr},
        eng);
    convolution_backward_data::primitive_desc bdpd(
        {algorithm::convolution_direct, src_md, wei_any, dst_md, st, pl, pr}, eng, fpd);
    convolution_backward_weights::primitive_desc bwpd(
        {algorithm::convolution_direct, src_md, wei_any, dst_md, st, pl, pr}, eng, fpd);
#endif
    memory x(src_md, eng), y(dst_md, eng), w(fpd.weights_desc(), eng), wd(bdpd.weights_desc(), eng),
        dw(bwpd.diff_weights_desc(), eng), dx(src_md, eng), dy(dst_md, eng);
    for (memory* m : {&x, &y, &w, &wd, &dw, &dx, &dy}) {
      float* p = static_cast<float*>(m->get_data_handle());
      const size_t n = m->get_desc().get_size() / 4;
      for (size_t i = 0; i < n; ++i) p[i] = 0.01f * static_cast<float>((i * 7919) % 201) - 1.0f;
    }
    convolution_forward f(fpd);
    convolution_backward_data bd(bdpd);
    convolution_backward_weights bw(bwpd);
    const double a = median_ms(s, f, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}});
    const double b = median_ms(
        s, bd, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, wd}, {DNNL_ARG_DIFF_SRC, dx}});
    const double c =
        median_ms(s, bw, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dw}});
    total[0] += a;
    total[1] += b;
    total[2] += c;
    const double gf = 2.0 * sh.N * sh.K * sh.H * sh.H * sh.C * sh.R * sh.R / 1e9;
    std::printf(
        "%-32s fwd %7.3f ms (%4.0f GF/s)  bwd-data %7.3f (%4.0f)  bwd-w %7.3f (%4.0f)  [%s %s "
        "%s]\n",
        sh.name, a, gf / a * 1e3, b, gf / b * 1e3, c, gf / c * 1e3, fpd.impl_info_str(),
        bdpd.impl_info_str(), bwpd.impl_info_str());
  }
  std::printf("total fwd %.2f bwd-data %.2f bwd-w %.2f ms\n", total[0], total[1], total[2]);
}
