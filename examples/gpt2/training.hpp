// The parts of the GPT-2 trainer's loop (train_main.hpp): the optimizer's parameter groups and
// schedule, one training step, the validation loss, what a checkpoint records, and the samples
// printed at the end.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <ember/data/gpt2_bpe.hpp>
#include <ember/data/token_files.hpp>
#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>
#include <ember/optim/adamw.hpp>
#include <ember/optim/schedule.hpp>

#include "common/run_support.hpp"
#include "common/training_run.hpp"
#include "corpus.hpp"
#include "gpt2.hpp"
#include "options.hpp"
#include "sampling.hpp"

namespace gpt2 {

using namespace ember;
using trainer::printf0;

/// The mean loss over the first --eval-batches batches of the validation tokens (every rank its
/// share, averaged), in eval mode and without recording.
template <class T>
double evaluate(GPT2LMHeadModel<T>& model, const Corpus& corpus, const TrainConfig& c,
                Device device) {
  const std::int64_t B = c.batch / dist::world_size();
  data::TokenBatches val(corpus.val, B, c.seq_len, dist::rank(), dist::world_size());
  const std::int64_t batches = std::min(c.eval_batches, val.batches_per_pass());
  model.eval();
  no_grad guard;
  double sum = 0;
  for (std::int64_t i = 0; i < batches; ++i) {
    const auto [x, y] = val.next(device);
    sum += static_cast<double>(model.loss(x, y).item());
  }
  model.train();
  return trainer::mean_over_ranks(sum / static_cast<double>(batches));
}

/// AdamW's groups: weight decay on the matrices only (GPT-2's, nanoGPT's and llm.c's recipe).
template <class T>
std::vector<optim::ParamGroup<optim::AdamWOptions>> adamw_groups(GPT2LMHeadModel<T>& model,
                                                                 const TrainConfig& c) {
  const optim::AdamWOptions decay{
      .lr = c.lr, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = c.weight_decay};
  optim::AdamWOptions none = decay;
  none.weight_decay = 0;
  return optim::decay_groups(model, decay, none);
}

/// Linear warmup over the first --warmup of the steps, then a cosine down to --min-lr * --lr.
inline optim::Schedule make_schedule(const TrainConfig& c) {
  const auto warmup_steps = std::min<std::int64_t>(
      c.steps - 1,
      static_cast<std::int64_t>(std::llround(c.warmup * static_cast<double>(c.steps))));
  return optim::warmup(warmup_steps,
                       optim::CosineDecay(c.lr, c.steps - warmup_steps, c.min_lr * c.lr));
}

/// One optimizer step at `lr`: the gradients of --accumulation micro-batches, summed, averaged
/// through the optimizer's gradient scale, clipped. Returns the last micro-batch's loss.
template <class T, class Optimizer>
Var<T> train_step(GPT2LMHeadModel<T>& model, Optimizer& opt, dist::DistributedDataParallel& ddp,
                  data::TokenBatches& batches, const TrainConfig& c, Device device,
                  std::int64_t step, double lr) {
  Var<T> loss;
  for (std::int64_t micro = 0; micro < c.accumulation; ++micro) {
    const auto [x, y] = batches.next(device);
    loss = model.loss(x, y);
    if (device.is_cpu()) {
      trainer::check_finite_loss(static_cast<double>(loss.value().item()), step + 1, "gpt2_train");
    }
    ddp.set_grad_sync(micro + 1 == c.accumulation);  // one all-reduce per step, at the last
    loss.backward();
  }
  trainer::optimizer_step(opt, lr, c.accumulation, c.max_grad_norm);
  return loss;
}

/// `n` tokens sampled after [end of text] (temperature 1, the 40 most likely tokens), decoded.
/// Each new token is one step through the model with the KV cache (O(context) work); at
/// n_positions the cache starts over from the last half of the tokens.
template <class T>
std::string sample(const GPT2LMHeadModel<T>& model, const data::Gpt2Bpe& bpe, std::int64_t n,
                   std::uint64_t seed, Device device) {
  no_grad guard;
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> context{data::Gpt2Bpe::kEndOfText};
  std::vector<std::int32_t> out;
  KVCache<T> cache;
  std::vector<std::int64_t> feed = context;  // the tokens the cache has not seen
  for (std::int64_t i = 0; i < n; ++i) {
    if (cache.length + static_cast<std::int64_t>(feed.size()) > model.config.n_positions) {
      cache = {};
      feed.assign(context.end() - model.config.n_positions / 2, context.end());
    }
    const auto T_ = static_cast<std::int64_t>(feed.size());
    const Tensor<T> logits =
        model.forward(from_vector<std::int64_t>(feed, Shape{1, T_}, device), &cache)
            .value()
            .select(1, T_ - 1);
    std::vector<double> p;
    for (const T v : logits.contiguous().to_vector()) p.push_back(static_cast<double>(v));
    const std::int32_t token = sample_token(p, 1.0, 40, rng);
    context.push_back(token);
    out.push_back(token);
    feed = {token};
  }
  return bpe.decode(out);
}

/// What a checkpoint records beyond the step: where the next training batch starts.
inline io::TrainingProgress checkpoint_progress(std::int64_t step,
                                                const data::TokenBatches& batches) {
  io::TrainingProgress progress;
  progress.step = step;
  progress.extra["batch_position"] = std::to_string(batches.position());
  return progress;
}

/// --resume's checkpoint loaded into the model, the optimizer and the batches' position. Returns
/// the step to go on from (0 without one).
template <class T, class Optimizer>
std::int64_t resume(const TrainConfig& c, const trainer::RunFiles& files, GPT2LMHeadModel<T>& model,
                    Optimizer& opt, data::TokenBatches& batches) {
  const auto p = trainer::resume_from(c.resume, files, model, opt, "gpt2_train", !c.eval_only);
  if (!p) return 0;
  const auto position = p->extra.find("batch_position");
  EMBER_CHECK(position != p->extra.end(),
              "gpt2_train: the checkpoint is not gpt2_train's (it has no batch_position)");
  batches.seek(std::stoll(position->second));
  printf0("resumed at step %lld\n", static_cast<long long>(p->step));
  return p->step;
}

}  // namespace gpt2
