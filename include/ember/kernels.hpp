// ember::kernels: the operators compiled once. The operators that are not elementwise (conv2d,
// the norms, pooling, softmax and the losses, matmul and linear, attention, embedding, dropout,
// the initialisers, rand and randn), on tensors and on Vars, a gradient's accumulation, and the
// copies, fills and casts every program makes, for float, double, bf16 and half, the copies of
// the other element types, and the optimizers' passes, are compiled into a static
// library (src/kernels/, the CMake target ember::kernels). A target that links it gets
// EMBER_KERNELS defined, and ember.hpp then declares these instances `extern template`: its
// translation units call the library's copies instead of compiling each operator, its fused
// expressions and its backward again. Nothing changes for a program that links nothing: every
// template still instantiates where it is used, as in any header-only build. Where nlohmann/json
// is found, the library also holds the safetensors reader and writer and the metrics logs'
// writers (src/kernels/io.cpp), and its targets get EMBER_IO_COMPILED (io/safetensors.hpp and
// io/metrics_log.hpp then declare them).
//
// Only function templates defined outside a class (not inline) are listed: GCC instantiates an
// inline function for inlining even when it is declared extern, and with it everything it calls.
// Each instance is in the kind's namespace (or, for a shared type's member, names `exec::mode`),
// so a host-compiler translation unit declares the host library's copies and an nvcc one the CUDA
// library's (src/kernels/*.cu); see core/config.hpp.
#pragma once

#include "ember.hpp"

/// The instances for element type T, each prefixed by `EXPLICIT`: `template` in the library's
/// sources (src/kernels/), `extern template` where the library is linked.
#define EMBER_KERNEL_INSTANCES(EXPLICIT, T)                                                        \
  EMBER_KERNEL_COPIES(EXPLICIT, T)                                                                 \
  namespace ember {                                                                                \
  EXPLICIT Tensor<T> rand<T>(const Shape&, std::uint64_t, Device, double, double, std::uint64_t);  \
  EXPLICIT Tensor<T> randn<T>(const Shape&, std::uint64_t, Device, double, double, std::uint64_t); \
  EXPLICIT Tensor<T> conv2d<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,               \
                               const Conv2dOptions&);                                              \
  EXPLICIT Tensor<T> conv2d<T>(const Tensor<T>&, const Tensor<T>&, const Conv2dOptions&);          \
  EXPLICIT Var<T> conv2d<T>(const Var<T>&, const autograd::ParamArg<T>&,                           \
                            const autograd::ParamArg<T>&, const Conv2dOptions&);                   \
  EXPLICIT Var<T> conv2d<T>(const Var<T>&, const autograd::ParamArg<T>&, const Conv2dOptions&);    \
  EXPLICIT Tensor<T> batch_norm<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,           \
                                   const Tensor<T>&, const Tensor<T>&, bool, double, double);      \
  EXPLICIT Tensor<T> batch_norm_add_relu<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,  \
                                            const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,  \
                                            bool, double, double);                                 \
  EXPLICIT Var<T> batch_norm<T>(const Var<T>&, const autograd::ParamArg<T>&,                       \
                                const autograd::ParamArg<T>&, const Tensor<T>&, const Tensor<T>&,  \
                                bool, double, double, ops::StatisticsGroupPtr);                    \
  EXPLICIT Var<T> batch_norm_add_relu<T>(const Var<T>&, const autograd::ParamArg<T>&,              \
                                         const autograd::ParamArg<T>&,                             \
                                         const autograd::ParamArg<T>&, const Tensor<T>&,           \
                                         const Tensor<T>&, bool, double, double,                   \
                                         ops::StatisticsGroupPtr);                                 \
  EXPLICIT Tensor<T> layer_norm<T>(const Tensor<T>&, const Shape&, const Tensor<T>&,               \
                                   const Tensor<T>&, double);                                      \
  EXPLICIT Var<T> layer_norm<T>(const Var<T>&, const Shape&, const autograd::ParamArg<T>&,         \
                                const autograd::ParamArg<T>&, double);                             \
  EXPLICIT Tensor<T> dropout_add_layer_norm<T>(const Tensor<T>&, const Tensor<T>&,                 \
                                               const Tensor<T>&, const Tensor<T>&, double,         \
                                               const DropoutOptions&);                             \
  EXPLICIT Var<T> dropout_add_layer_norm<T>(const Var<T>&, const autograd::ParamArg<T>&,           \
                                            const autograd::ParamArg<T>&,                          \
                                            const autograd::ParamArg<T>&, double,                  \
                                            const DropoutOptions&);                                \
  EXPLICIT Tensor<T> dropout<T>(const Tensor<T>&, double, bool, std::uint64_t, std::uint64_t);     \
  EXPLICIT Var<T> dropout<T>(const Var<T>&, double, bool, std::uint64_t, std::uint64_t);           \
  EXPLICIT Tensor<T> max_pool2d<T>(const Tensor<T>&, const Pool2dOptions&);                        \
  EXPLICIT Tensor<T> avg_pool2d<T>(const Tensor<T>&, const Pool2dOptions&);                        \
  EXPLICIT Tensor<T> adaptive_avg_pool2d<T>(const Tensor<T>&, std::array<std::int64_t, 2>);        \
  EXPLICIT Var<T> max_pool2d<T>(const Var<T>&, const Pool2dOptions&);                              \
  EXPLICIT Var<T> avg_pool2d<T>(const Var<T>&, const Pool2dOptions&);                              \
  EXPLICIT Var<T> adaptive_avg_pool2d<T>(const Var<T>&, std::array<std::int64_t, 2>);              \
  EXPLICIT Tensor<T> softmax<T>(const Tensor<T>&, int);                                            \
  EXPLICIT Tensor<T> log_softmax<T>(const Tensor<T>&, int);                                        \
  EXPLICIT Var<T> softmax<T>(const Var<T>&, int);                                                  \
  EXPLICIT Var<T> log_softmax<T>(const Var<T>&, int);                                              \
  EXPLICIT Tensor<T> cross_entropy<T>(const Tensor<T>&, const Tensor<std::int64_t>&,               \
                                      const CrossEntropyOptions&);                                 \
  EXPLICIT Var<T> cross_entropy<T>(const Var<T>&, const Tensor<std::int64_t>&,                     \
                                   const CrossEntropyOptions&);                                    \
  EXPLICIT Tensor<T> nll_loss<T>(const Tensor<T>&, const Tensor<std::int64_t>&, Reduction,         \
                                 std::int64_t);                                                    \
  EXPLICIT Var<T> nll_loss<T>(const Var<T>&, const Tensor<std::int64_t>&, Reduction,               \
                              std::int64_t);                                                       \
  EXPLICIT Tensor<T> mse_loss<T>(const Tensor<T>&, const Tensor<T>&, Reduction);                   \
  EXPLICIT Tensor<T> matmul<T>(const Tensor<T>&, const Tensor<T>&);                                \
  EXPLICIT Tensor<T> linear<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, Activation);  \
  EXPLICIT Var<T> matmul<Var<T>, Var<T>>(const Var<T>&, const Var<T>&);                            \
  EXPLICIT Var<T> linear<Var<T>, Var<T>, Var<T>>(const Var<T>&, const Var<T>&, const Var<T>&,      \
                                                 Activation);                                      \
  EXPLICIT Var<T> linear<Var<T>, Var<T>, Tensor<T>>(const Var<T>&, const Var<T>&,                  \
                                                    const Tensor<T>&, Activation);                 \
  EXPLICIT Tensor<T> feed_forward<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,         \
                                     const Tensor<T>&, const Tensor<T>&, Activation);              \
  EXPLICIT Var<T> feed_forward<Var<T>, Var<T>, Var<T>, Var<T>, Var<T>>(                            \
      const Var<T>&, const Var<T>&, const Var<T>&, const Var<T>&, const Var<T>&, Activation);      \
  EXPLICIT Tensor<T> scaled_dot_product_attention<T>(const Tensor<T>&, const Tensor<T>&,           \
                                                     const Tensor<T>&, const Tensor<bool>&,        \
                                                     const AttentionOptions&);                     \
  EXPLICIT Var<T> scaled_dot_product_attention<T>(const Var<T>&, const autograd::ParamArg<T>&,     \
                                                  const autograd::ParamArg<T>&,                    \
                                                  const Tensor<bool>&, const AttentionOptions&);   \
  EXPLICIT Tensor<T> embedding<T>(const Tensor<T>&, const Tensor<std::int64_t>&,                   \
                                  std::optional<std::int64_t>, std::optional<double>, double);     \
  EXPLICIT Var<T> embedding<T>(const Var<T>&, const Tensor<std::int64_t>&,                         \
                               std::optional<std::int64_t>, std::optional<double>, double);        \
  }                                                                                                \
  namespace ember::ops {                                                                           \
  EXPLICIT std::pair<Tensor<T>, Tensor<T>> conv2d_backward<T>(const Tensor<T>&, const Tensor<T>&,  \
                                                              const Tensor<T>&,                    \
                                                              const Conv2dOptions&, bool, bool);   \
  EXPLICIT NormStats<acc_t<T>> norm_stats<T>(const Tensor<T>&, const Dims&, double, const char*);  \
  EXPLICIT Tensor<T> normalize<T>(const Tensor<T>&, const NormStats<acc_t<T>>&, const Tensor<T>&,  \
                                  const Tensor<T>&);                                               \
  EXPLICIT std::tuple<Tensor<T>, Tensor<T>, Tensor<T>> normalize_backward<T>(                      \
      const Tensor<T>&, const NormStats<acc_t<T>>&, const Tensor<T>&, const Tensor<T>&,            \
      const Tensor<T>&, const Dims&, bool);                                                        \
  EXPLICIT BatchNormSetup<T> batch_norm_setup<T>(const Tensor<T>&, const Tensor<T>&,               \
                                                 const Tensor<T>&, const Tensor<T>&,               \
                                                 const Tensor<T>&, bool, double, double,           \
                                                 StatisticsGroupPtr);                              \
  EXPLICIT std::tuple<Tensor<T>, Tensor<T>, Tensor<T>, Tensor<T>> channel_batch_norm_backward<T>(  \
      const Tensor<T>&, const BatchNormSetup<T>&, const Tensor<T>&, const Tensor<T>&, bool);       \
  EXPLICIT std::tuple<Tensor<T>, Tensor<T>, Tensor<T>> batch_norm_backward<T>(                     \
      const Tensor<T>&, const BatchNormSetup<T>&, const Tensor<T>&, bool);                         \
  EXPLICIT Tensor<T> batch_norm_output<T>(const Tensor<T>&, const BatchNormSetup<T>&);             \
  EXPLICIT Tensor<T> normalize_add_relu<T>(const Tensor<T>&, const BatchNormSetup<T>&,             \
                                           const Tensor<T>&);                                      \
  EXPLICIT std::pair<Tensor<T>, Tensor<std::int32_t>> max_pool2d_forward<T>(const Tensor<T>&,      \
                                                                            const Pool2dGeometry&, \
                                                                            bool);                 \
  EXPLICIT Tensor<T> avg_pool2d_forward<T>(const Tensor<T>&, const Pool2dGeometry&, bool);         \
  EXPLICIT Tensor<T> max_pool2d_backward<T>(const Tensor<T>&, const Tensor<std::int32_t>&,         \
                                            const Pool2dGeometry&, MemoryFormat);                  \
  EXPLICIT Tensor<T> avg_pool2d_backward<T>(const Tensor<T>&, const Pool2dGeometry&, bool,         \
                                            MemoryFormat);                                         \
  EXPLICIT Tensor<T> softmax_backward<T>(const Tensor<T>&, const Tensor<T>&, int);                 \
  EXPLICIT Tensor<T> log_softmax_backward<T>(const Tensor<T>&, const Tensor<T>&, int);             \
  EXPLICIT CrossEntropyTerms<acc_t<T>> cross_entropy_terms<T>(const Tensor<T>&,                    \
                                                              const Tensor<std::int64_t>&,         \
                                                              const CrossEntropyOptions&);         \
  EXPLICIT Tensor<T> cross_entropy_backward<T>(const Tensor<T>&, const Tensor<std::int64_t>&,      \
                                               const Tensor<acc_t<T>>&, const Tensor<T>&,          \
                                               const CrossEntropyOptions&, double);                \
  EXPLICIT std::pair<Tensor<T>, double> nll_loss_forward<T>(const Tensor<T>&,                      \
                                                            const Tensor<std::int64_t>&,           \
                                                            Reduction, std::int64_t);              \
  EXPLICIT std::pair<Tensor<T>, AttentionSaved<T>> attention_forward<T>(const Tensor<T>&,          \
                                                                        const Tensor<T>&,          \
                                                                        const Tensor<T>&,          \
                                                                        const Tensor<bool>&,       \
                                                                        const AttentionOptions&);  \
  EXPLICIT std::tuple<Tensor<T>, Tensor<T>, Tensor<T>> attention_backward<T>(                      \
      const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, const AttentionSaved<T>&,              \
      const AttentionOptions&, const Tensor<T>&);                                                  \
  EXPLICIT std::tuple<Tensor<T>, RowNormSaved<T>> dropout_add_layer_norm_forward<T>(               \
      const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, double,              \
      const DropoutOptions&);                                                                      \
  EXPLICIT Tensor<T> embedding_backward<T>(const Tensor<T>&, const Tensor<std::int64_t>&,          \
                                           std::int64_t, std::int64_t, std::int64_t);              \
  EXPLICIT void embedding_backward_add<T>(const Tensor<T>&, const Tensor<T>&,                      \
                                          const Tensor<std::int64_t>&, std::int64_t);              \
  }                                                                                                \
  namespace ember::autograd {                                                                      \
  EXPLICIT void accumulate_grad<T, T>(VarNode<T>&, const Tensor<T>&, bool);                        \
  EXPLICIT LinearSaved<T> linear_saving<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,   \
                                           Activation, bool);                                      \
  EXPLICIT Tensor<T> activation_grad<T>(const Tensor<T>&, const LinearSaved<T>&, Activation);      \
  EXPLICIT std::pair<Tensor<T>, Tensor<T>> linear_param_grads<T>(const Tensor<T>&,                 \
                                                                 const Tensor<T>&, bool);          \
  }                                                                                                \
  namespace ember::nn {                                                                            \
  EXPLICIT Var<T> dropout_add_layer_norm<T>(const Var<T>&, const Var<T>&, const Dropout<T>&,       \
                                            const LayerNorm<T>&);                                  \
  }                                                                                                \
  namespace ember::nn::init {                                                                      \
  EXPLICIT Tensor<T> uniform<T>(const Shape&, double, double, Device);                             \
  EXPLICIT Tensor<T> normal<T>(const Shape&, double, double, Device);                              \
  EXPLICIT Tensor<T> trunc_normal<T>(const Shape&, double, double, double, double, Device);        \
  EXPLICIT Tensor<T> kaiming_uniform<T>(const Shape&, double, Device);                             \
  EXPLICIT Tensor<T> kaiming_normal<T>(const Shape&, double, Device);                              \
  }

/// Evaluating `__VA_ARGS__` (an expression type) into a Tensor<T> with store `Op`, as a tensor's
/// `=` and `+=` do: `evaluate_into`, and with it the `evaluate` it calls.
#define EMBER_KERNEL_EVALUATION(EXPLICIT, Op, T, ...)                       \
  namespace ember::exec {                                                   \
  EXPLICIT void evaluate_into<StoreOp::Op>(Tensor<T>&, const __VA_ARGS__&); \
  }

/// A store of a Tensor<T> through `evaluate` by value: every evaluation whose operands alias its
/// output makes one (it materialises the expression first, then stores that).
#define EMBER_KERNEL_LEAF_STORE(EXPLICIT, Op, T)                         \
  namespace ember::exec {                                                \
  EXPLICIT void evaluate<StoreOp::Op>(const std::tuple<Tensor<T>>&,      \
                                      const std::tuple<expr::Leaf<T>>&); \
  }

/// A Tensor<T>'s copying members, as every program calls them: contiguous, clone, to, pin_memory,
/// to_vector, copy_ from its own type, and the gather to the host that `to` makes of a view.
#define EMBER_KERNEL_TENSOR_COPIES(EXPLICIT, T)                             \
  namespace ember {                                                         \
  EXPLICIT Tensor<T> Tensor<T>::contiguous<exec::mode>(MemoryFormat) const; \
  EXPLICIT Tensor<T> Tensor<T>::clone<exec::mode>() const;                  \
  EXPLICIT Tensor<T> Tensor<T>::to<exec::mode>(Device, bool) const;         \
  EXPLICIT Tensor<T> Tensor<T>::pin_memory<exec::mode>() const;             \
  EXPLICIT std::vector<T> Tensor<T>::to_vector<exec::mode>() const;         \
  EXPLICIT Tensor<T>& Tensor<T>::copy_<T, exec::mode>(const Tensor<T>&);    \
  EXPLICIT Tensor<T> detail::gather_to_host<T>(const Tensor<T>&);           \
  }

/// `empty<T>`, which does not evaluate (it is outside the kind's namespace): declared extern in
/// every unit, compiled by the host units only (src/kernels/copies.cpp), since one instance serves
/// both kinds.
#define EMBER_KERNEL_EMPTY(EXPLICIT, T)                            \
  namespace ember {                                                \
  EXPLICIT Tensor<T> empty<T>(const Shape&, Device, MemoryFormat); \
  }

/// What every element type needs: a Tensor<T>'s copying members and what they evaluate (copies
/// and the aliasing fallback's store), and fills.
#define EMBER_KERNEL_ELEMENT_COPIES(EXPLICIT, T)           \
  EMBER_KERNEL_TENSOR_COPIES(EXPLICIT, T)                  \
  EMBER_KERNEL_LEAF_STORE(EXPLICIT, set, T)                \
  EMBER_KERNEL_EVALUATION(EXPLICIT, set, T, expr::Leaf<T>) \
  EMBER_KERNEL_EVALUATION(EXPLICIT, set, T, expr::Cast<T, expr::ScalarNode<double>>)

/// What every program evaluates into a floating Tensor<T>: the above, `+=` of one tensor
/// (gradient accumulation), casts from each floating type (copy_, the master weights,
/// checkpoints), and the sum of two tensors (a gradient that two paths reach).
#define EMBER_KERNEL_COPIES(EXPLICIT, T)                                            \
  EMBER_KERNEL_ELEMENT_COPIES(EXPLICIT, T)                                          \
  EMBER_KERNEL_LEAF_STORE(EXPLICIT, add, T)                                         \
  EMBER_KERNEL_EVALUATION(EXPLICIT, add, T, expr::Leaf<T>)                          \
  EMBER_KERNEL_EVALUATION(EXPLICIT, set, T, expr::Cast<T, expr::Leaf<float>>)       \
  EMBER_KERNEL_EVALUATION(EXPLICIT, set, T, expr::Cast<T, expr::Leaf<double>>)      \
  EMBER_KERNEL_EVALUATION(EXPLICIT, set, T, expr::Cast<T, expr::Leaf<ember::bf16>>) \
  EMBER_KERNEL_EVALUATION(EXPLICIT, set, T, expr::Cast<T, expr::Leaf<ember::half>>) \
  EMBER_KERNEL_EVALUATION(EXPLICIT, set, T, expr::Map<fn::Add, expr::Leaf<T>, expr::Leaf<T>>)

/// The same for the element types that are not floating (labels, indices, masks, pixels: what
/// data pipelines, losses and checkpoints copy): the above and copy_'s cast from its own type.
#define EMBER_KERNEL_INTEGER_COPIES(EXPLICIT, T) \
  EMBER_KERNEL_ELEMENT_COPIES(EXPLICIT, T)       \
  EMBER_KERNEL_EVALUATION(EXPLICIT, set, T, expr::Cast<T, expr::Leaf<T>>)

/// The passes of optimizer `Opt` (options `Opt##Options`), prefixed by `EXPLICIT` as above: its
/// fused step, gradient norm and state. (The constructors stay inline.)
#define EMBER_KERNEL_OPTIMIZER(EXPLICIT, Opt)                                                   \
  namespace ember::optim {                                                                      \
  EXPLICIT void FusedOptimizer<Opt, Opt##Options>::update_all<exec::mode>();                    \
  EXPLICIT GradNorm FusedOptimizer<Opt, Opt##Options>::compute_grad_norm<exec::mode>();         \
  EXPLICIT OptimizerState FusedOptimizer<Opt, Opt##Options>::collect_state<exec::mode>() const; \
  EXPLICIT void FusedOptimizer<Opt, Opt##Options>::restore_state<exec::mode>(                   \
      const OptimizerState&, bool);                                                             \
  }

/// Every optimizer the library compiles.
#define EMBER_KERNEL_OPTIMIZERS(EXPLICIT) \
  EMBER_KERNEL_OPTIMIZER(EXPLICIT, SGD)   \
  EMBER_KERNEL_OPTIMIZER(EXPLICIT, LARS)  \
  EMBER_KERNEL_OPTIMIZER(EXPLICIT, AdamW) \
  EMBER_KERNEL_OPTIMIZER(EXPLICIT, LAMB)

/// Every element type the library compiles. nvcc's units have float, bf16 and half, the types
/// training runs in on a GPU; of double only the copies (checkpoints and metrics make them): the
/// double operators (gradcheck's type, which a GPU runs at a fraction of its speed) only the
/// host's, and a CUDA translation unit that uses them compiles them itself, as in header-only use.
/// That saves the library's longest unit (125 s of CPU).
#if defined(EMBER_CUDA_KERNELS)
#define EMBER_KERNEL_INSTANCES_DOUBLE(EXPLICIT) EMBER_KERNEL_COPIES(EXPLICIT, double)
#else
#define EMBER_KERNEL_INSTANCES_DOUBLE(EXPLICIT) EMBER_KERNEL_INSTANCES(EXPLICIT, double)
#endif
#define EMBER_KERNEL_INSTANCES_ALL(EXPLICIT)    \
  EMBER_KERNEL_INSTANCES(EXPLICIT, float)       \
  EMBER_KERNEL_INSTANCES_DOUBLE(EXPLICIT)       \
  EMBER_KERNEL_INSTANCES(EXPLICIT, ember::bf16) \
  EMBER_KERNEL_INSTANCES(EXPLICIT, ember::half)

/// `empty` of every element type (host units only: EMBER_KERNEL_EMPTY).
#define EMBER_KERNEL_EMPTY_ALL(EXPLICIT)     \
  EMBER_KERNEL_EMPTY(EXPLICIT, float)        \
  EMBER_KERNEL_EMPTY(EXPLICIT, double)       \
  EMBER_KERNEL_EMPTY(EXPLICIT, ember::bf16)  \
  EMBER_KERNEL_EMPTY(EXPLICIT, ember::half)  \
  EMBER_KERNEL_EMPTY(EXPLICIT, std::int64_t) \
  EMBER_KERNEL_EMPTY(EXPLICIT, std::int32_t) \
  EMBER_KERNEL_EMPTY(EXPLICIT, std::uint8_t) \
  EMBER_KERNEL_EMPTY(EXPLICIT, bool)

/// The copies of every element type that is not floating, in both kinds of unit.
#define EMBER_KERNEL_INTEGER_COPIES_ALL(EXPLICIT)     \
  EMBER_KERNEL_INTEGER_COPIES(EXPLICIT, std::int64_t) \
  EMBER_KERNEL_INTEGER_COPIES(EXPLICIT, std::int32_t) \
  EMBER_KERNEL_INTEGER_COPIES(EXPLICIT, std::uint8_t) \
  EMBER_KERNEL_INTEGER_COPIES(EXPLICIT, bool)

#if defined(EMBER_KERNELS)
EMBER_KERNEL_INSTANCES_ALL(extern template)
EMBER_KERNEL_INTEGER_COPIES_ALL(extern template)
EMBER_KERNEL_EMPTY_ALL(extern template)
EMBER_KERNEL_OPTIMIZERS(extern template)
#endif
