// One fused launch, described once. An evaluation (assign.hpp) and a fused backward
// (autograd/fused_backward.hpp) each list the arrays their plan walks, outputs first and then
// what the plan reads in planning order, each with its strides broadcast to the launch's shape.
// The space checks the operands' devices, collapses the iteration space (layout.hpp), hands the
// plans their collapsed strides, knows whether every pointer suits the GPU's packed access, and
// runs the plan on its device. The vector-width policy is here too. A reduction (reduce.hpp)
// gathers its operands the same way, for a layout of its own (reduce_layout.hpp).
//
// Every launch reaches its device through launch() below, the one device dispatch: an
// evaluation or backward (PlanPass), a reduction (ReducePass), for_each_index, for_each_row, the
// sorts of ops/indexing and the optimizers' multi-tensor passes each describe their work as a
// value with on_host() and, where nvcc compiles the translation unit, on_cuda(device index).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/cuda.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"
#include "../core/shape.hpp"
#include "../expr/plan.hpp"
#include "cpu_executor.hpp"
#include "layout.hpp"
#if defined(EMBER_CUDA_KERNELS)
#include "cuda_executor.cuh"
#endif

namespace ember::exec {

/// Elements of at most `Bytes` bytes in `Target` bytes (4-byte lanes when nothing is read).
template <std::size_t Bytes, int Target>
inline constexpr int lanes_in = Bytes == 0 ? Target / 4 : std::max<int>(1, Target / int(Bytes));
/// Lanes of a CPU block for elements of at most `Bytes` bytes: cpu::kBlockBytes per operand.
template <std::size_t Bytes>
inline constexpr int cpu_width = lanes_in<Bytes, cpu::kBlockBytes>;
/// Elements per access on the GPU's dense path: 16 bytes of the widest element.
template <std::size_t Bytes>
inline constexpr int gpu_width = lanes_in<Bytes, 16>;

// Runs with the executor of this kind of translation unit (core/config.hpp).
inline namespace EMBER_UNIT_KIND {

/// Throws unless `device` can run a launch from this translation unit; with no CUDA compiler,
/// explains how to get one. Its body depends on the kind of unit, so it lives in the unit kind's
/// namespace: a plain inline function would be one function to the linker, and a program with
/// both kinds of unit would keep either body for both.
inline void require_runnable(Device device) {
  if (device.is_cuda()) {
    cuda::require_device(device.index());
#if !defined(EMBER_CUDA_KERNELS)
    fail("ember: evaluating an expression on ", device.str(),
         " needs its translation unit compiled by nvcc (a .cu file, or CMake's CUDA language); "
         "this one was compiled by the host compiler");
#endif
  }
}

/// Runs `work` on `device`: work.on_host() on the CPU; on a CUDA device, once require_runnable
/// has found it usable, work.on_cuda(index), which a work type declares only where nvcc compiles
/// the translation unit.
template <class Work>
void launch(const Work& work, Device device) {
  if (device.is_cpu()) {
    work.on_host();
    return;
  }
  require_runnable(device);
#if defined(EMBER_CUDA_KERNELS)
  work.on_cuda(device.index());
#endif
}

class LaunchSpace {
 public:
  LaunchSpace(Shape shape, Device device) : shape_(std::move(shape)), device_(device) {}

  const Shape& shape() const { return shape_; }
  Device device() const { return device_; }
  /// Arrays added so far (before collapse(), which takes them).
  std::size_t size() const { return arrays_.size(); }
  /// The arrays' strides as added (before collapse()).
  const std::vector<Strides>& arrays() const { return arrays_; }

  /// An array walked with strides `s` (already broadcast to shape()) from `data`, or from
  /// pointers the plan holds itself (null: name them with touches()).
  void add(Strides s, const void* data = nullptr, std::size_t element_size = 0) {
    if (moves(s)) touches(data, element_size);
    arrays_.push_back(std::move(s));
  }

  /// A pointer the dense path walks in packs: it must be aligned for them.
  void touches(const void* data, std::size_t element_size) {
    if (data != nullptr && element_size != 0) {
      pointers_.push_back({reinterpret_cast<std::uintptr_t>(data), element_size});
    }
  }

  /// Every leaf of an expression (expr::leaves_of), each of which must be on device(): its
  /// strides broadcast to shape(). `what` names the caller in messages.
  void add_leaves(const expr::LeafInfos& leaves, std::string_view what) {
    for (const expr::LeafInfo& leaf : leaves) {
      if (leaf.has_device && !(leaf.device == device_)) {
        fail("ember: ", what, ": an operand is on ", leaf.device.str(), " but the output is on ",
             device_.str(), "; move it with .to(device) first");
      }
      add(broadcast_strides(leaf.shape, leaf.strides, shape_), leaf.data, leaf.element_size);
    }
  }

  /// Collapses the space once every array is in; the layout may still be adjusted (a fused
  /// backward lets broadcast seed operands keep the dense path).
  IterLayout& collapse() {
    layout_ = make_layout(shape_, std::move(arrays_));
    arrays_.clear();
    return layout_;
  }
  const IterLayout& layout() const { return layout_; }
  /// Array i's collapsed strides, as kernels read them.
  expr::PlanStrides plan_strides(std::size_t i) const {
    return expr::PlanStrides(layout_.arrays[i], layout_.ndim());
  }
  /// The collapsed strides of arrays [begin, end), handed to a plan's leaves in order.
  expr::PlanBuilder planner(std::size_t begin, std::size_t end) const {
    const auto first = layout_.arrays.begin();
    return expr::PlanBuilder(layout_.ndim(),
                             std::vector<Strides>(first + static_cast<std::ptrdiff_t>(begin),
                                                  first + static_cast<std::ptrdiff_t>(end)));
  }

  /// Runs `plan` over the collapsed space on device(): the CPU in blocks of VCpu lanes, the GPU
  /// with VGpu elements per access on the dense path where every pointer is aligned for that
  /// (the strided kernel otherwise).
  template <int VCpu, int VGpu, class Plan>
  void run(const Plan& plan) const;

  /// Whether every pointer the dense path walks is aligned for packs of `lanes` elements.
  bool aligned(int lanes) const {
    return std::all_of(pointers_.begin(), pointers_.end(), [&](const Pointer& p) {
      return p.address % (p.element_size * static_cast<std::size_t>(lanes)) == 0;
    });
  }

 private:
  struct Pointer {
    std::uintptr_t address;
    std::size_t element_size;
  };

  // Whether an array reads more than one address (a broadcast one is read one element at a
  // time, and needs no alignment).
  bool moves(const Strides& s) const {
    for (int d = 0; d < shape_.rank(); ++d) {
      if (shape_[d] > 1 && s[d] != 0) return true;
    }
    return false;
  }

  Shape shape_;
  Device device_;
  std::vector<Strides> arrays_;
  std::vector<Pointer> pointers_;
  IterLayout layout_;
};

/// An evaluation's or a fused backward's plan over a collapsed space: blocks of VCpu lanes on
/// the CPU, VGpu elements per access on the GPU's dense path.
template <int VCpu, int VGpu, class Plan>
struct PlanPass {
  const Plan& plan;
  const LaunchSpace& space;

  void on_host() const { cpu::run<VCpu>(plan, space.layout()); }
#if defined(EMBER_CUDA_KERNELS)
  void on_cuda(int device) const {
    gpu::run<VGpu>(plan, space.layout(), space.aligned(VGpu), device);
  }
#endif
};

template <int VCpu, int VGpu, class Plan>
void LaunchSpace::run(const Plan& plan) const {
  launch(PlanPass<VCpu, VGpu, Plan>{plan, *this}, device_);
}

}  // namespace EMBER_UNIT_KIND
}  // namespace ember::exec
