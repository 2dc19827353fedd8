// The parts of the BERT trainer's loop (pretrain_main.hpp): the model's configuration and
// Hugging Face weights, LAMB or AdamW and the schedule, one step over --accumulation
// micro-batches, the masked-LM and next-sentence evaluation, and what a checkpoint records.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include <ember/data/batches.hpp>
#include <ember/data/wordpiece.hpp>
#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>
#include <ember/io/safetensors.hpp>
#include <ember/optim/adamw.hpp>
#include <ember/optim/lamb.hpp>
#include <ember/optim/schedule.hpp>

#include "bert.hpp"
#include "common/run_support.hpp"
#include "common/training_run.hpp"
#include "corpus.hpp"
#include "options.hpp"

namespace bert {

using namespace ember;
using trainer::printf0;

struct PretrainEval {
  double mlm_accuracy = 0, nsp_accuracy = 0, mlm_loss = 0, nsp_loss = 0;
};

/// Masked-LM and next-sentence accuracy and losses over the evaluation set, in eval mode (no
/// dropout), without recording.
template <class T>
PretrainEval evaluate(BertForPreTraining<T>& model, const std::vector<Instance>& eval,
                      const PretrainConfig& c, Device device) {
  const std::int64_t batch = c.batch;
  model.eval();
  no_grad guard;
  PretrainEval r;
  double mlm_hits = 0, mlm_count = 0, nsp_hits = 0, nsp_count = 0, batches = 0;
  const std::int64_t rank = dist::rank(), ranks = dist::world_size();
  for (std::int64_t start = 0; start < static_cast<std::int64_t>(eval.size()); start += batch) {
    // This rank's part of the batch (as Batches::shard splits one); the counts are summed below.
    const std::int64_t m =
        std::min<std::int64_t>(batch, static_cast<std::int64_t>(eval.size()) - start);
    const std::int64_t from = start + rank * m / ranks, n = start + (rank + 1) * m / ranks - from;
    if (n == 0) continue;
    std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
    std::iota(idx.begin(), idx.end(), from);
    const PretrainingBatch b = batch_on(eval, idx, c, device);
    const PreTrainingOutput<T> out =
        model.forward(b.input_ids, b.token_type_ids, b.attention_mask, b.masked_positions,
                      b.masked_ids, b.next_sentence_labels);
    r.mlm_loss += static_cast<double>(out.mlm_loss.value().item());
    r.nsp_loss += static_cast<double>(out.nsp_loss.value().item());
    ++batches;
    // Accuracy on the host: a masked token is right when no other token scores strictly higher.
    const Tensor<float> mlm = Tensor<float>(cast<float>(out.mlm_logits.value())).to(Device::cpu());
    const Tensor<float> nsp = Tensor<float>(cast<float>(out.nsp_logits.value())).to(Device::cpu());
    const Tensor<std::int64_t> ids = b.masked_ids.to(Device::cpu());
    const Tensor<std::int64_t> nsl = b.next_sentence_labels.to(Device::cpu());
    const std::int64_t V = mlm.size(1);
    for (std::int64_t row = 0; row < mlm.size(0); ++row) {
      const std::int64_t label = ids.data()[row];
      if (label < 0) continue;
      mlm_hits += trainer::rank_of(mlm.data() + row * V, V, label) == 0;
      ++mlm_count;
    }
    for (std::int64_t row = 0; row < n; ++row) {
      const float* p = nsp.data() + row * 2;
      nsp_hits += (p[1] > p[0] ? 1 : 0) == nsl.data()[row];
      ++nsp_count;
    }
  }
  model.train();
  const Tensor<double> sums = from_vector<double>(
      {mlm_hits, mlm_count, nsp_hits, nsp_count, r.mlm_loss, r.nsp_loss, batches});
  dist::all_reduce(sums);
  const std::vector<double> t = sums.to_vector();
  r.mlm_accuracy = t[1] > 0 ? t[0] / t[1] : 0;
  r.nsp_accuracy = t[3] > 0 ? t[2] / t[3] : 0;
  r.mlm_loss = t[4] / std::max(t[6], 1.0);  // the mean over the ranks' parts of the batches
  r.nsp_loss = t[5] / std::max(t[6], 1.0);
  return r;
}

/// Loads Hugging Face weights: a BertForPreTraining file (names `bert.*`, `cls.*`) into the whole
/// model, a BertModel file (`embeddings.*`, `encoder.*`, `pooler.*`) into the encoder.
template <class T>
void load_hugging_face(BertForPreTraining<T>& model, const std::filesystem::path& path) {
  const NamedTensors tensors = io::load_safetensors(path);
  const bool whole = std::any_of(tensors.begin(), tensors.end(),
                                 [](const auto& t) { return t.first.rfind("bert.", 0) == 0; });
  if (whole) {
    io::load_state_dict(model, tensors, {.allow_unexpected = true});
  } else {
    io::load_state_dict(model.bert, tensors, {.allow_unexpected = true});
  }
  printf0("loaded %s weights from %s\n", whole ? "BertForPreTraining" : "BertModel (encoder)",
          path.string().c_str());
}

/// LAMB (or AdamW) with no weight decay (and for LAMB no trust ratio) on biases and LayerNorm
/// parameters, as MLPerf's reference.
template <class Opt, class T>
Opt make_optimizer(BertForPreTraining<T>& model, const PretrainConfig& c) {
  using Options = typename Opt::options_type;
  Options main{};
  main.lr = c.lr;
  main.weight_decay = c.weight_decay;
  Options excluded = main;
  excluded.weight_decay = 0;
  if constexpr (std::is_same_v<Opt, optim::LAMB>) excluded.exclude_from_adaptation = true;
  return Opt(optim::decay_groups(model, main, excluded));
}

/// Warm-up over the first --warmup of the steps, then a linear decay to 0.
inline optim::Schedule make_schedule(const PretrainConfig& c) {
  const auto warmup_steps = std::min<std::int64_t>(
      c.steps - 1,
      static_cast<std::int64_t>(std::llround(c.warmup * static_cast<double>(c.steps))));
  return optim::warmup(warmup_steps,
                       optim::PolynomialDecay(c.lr, 0.0, c.steps - warmup_steps, 1.0));
}

/// The model's configuration: --config's, with the tokenizer's vocabulary and room for
/// --seq-len positions.
inline BertConfig model_config(const PretrainConfig& c, const data::WordPieceTokenizer& tokenizer) {
  BertConfig bc = config_by_name(c.config);
  bc.vocab_size = tokenizer.vocab_size();
  bc.pad_token_id = tokenizer.pad_id();
  bc.max_positions = std::max<std::int64_t>(bc.max_positions, c.seq_len);
  return bc;
}

/// What a checkpoint records of the run beyond the step: the data order's epoch and position in
/// it, so a resumed run draws the batches an uninterrupted one would.
inline io::TrainingProgress checkpoint_progress(std::int64_t step, const data::Batches& order) {
  io::TrainingProgress progress;
  progress.step = step;
  progress.epoch = order.epoch();
  progress.extra["batch_position"] = std::to_string(order.position());
  return progress;
}

/// The data order's position saved by checkpoint_progress in the checkpoint `from`.
inline std::int64_t batch_position(const io::TrainingProgress& p,
                                   const std::filesystem::path& from) {
  const auto position = p.extra.find("batch_position");
  EMBER_CHECK(position != p.extra.end(), "bert_pretrain: '", from.string(),
              "' is not a bert_pretrain checkpoint (it has no batch_position)");
  return std::stoll(position->second);
}

/// One optimizer step at `lr`: the gradients of `accumulation` micro-batches, summed, then averaged
/// through the optimizer's gradient scale (no pass of its own), and clipped. Returns the last
/// micro-batch's output, what the log reports.
template <class T, class Opt>
PreTrainingOutput<T> train_step(BertForPreTraining<T>& model, Opt& opt,
                                dist::DistributedDataParallel& ddp, data::Batches& order,
                                const PretrainData& data, const PretrainConfig& c, Device device,
                                std::int64_t step, double lr) {
  PreTrainingOutput<T> out;
  for (std::int64_t micro = 0; micro < c.accumulation; ++micro) {
    if (!order.has_next()) order.restore(order.epoch() + 1, 0);
    const PretrainingBatch b = batch_on(data.train, order.next(), c, device);
    out = model.forward(b.input_ids, b.token_type_ids, b.attention_mask, b.masked_positions,
                        b.masked_ids, b.next_sentence_labels);
    if (device.is_cpu()) {
      trainer::check_finite_loss(static_cast<double>(out.loss.value().item()), step + 1,
                                 "bert_pretrain");
    }
    ddp.set_grad_sync(micro + 1 == c.accumulation);  // one all-reduce per step, at the last
    out.loss.backward();
  }
  trainer::optimizer_step(opt, lr, c.accumulation, c.max_grad_norm);
  return out;
}

/// An evaluation on stdout (unless `quiet`), after the progress bar's line.
inline void print_eval(std::int64_t step, const PretrainEval& e, double unigram_baseline,
                       double elapsed, bool quiet) {
  if (quiet) return;
  if (dist::rank() == 0) std::fprintf(stderr, "\n");
  printf0(
      "step %lld: masked-LM accuracy %.2f%% (unigram baseline %.2f%%), next sentence %.2f%%, "
      "eval loss %.3f + %.3f, %s elapsed\n",
      static_cast<long long>(step), 100 * e.mlm_accuracy, 100 * unigram_baseline,
      100 * e.nsp_accuracy, e.mlm_loss, e.nsp_loss, trainer::hms(elapsed).c_str());
}

/// The order of the training instances: shuffled each epoch from --seed, this rank's part of every
/// batch.
inline data::Batches batch_order(const PretrainConfig& c, const PretrainData& data) {
  data::Batches order(static_cast<std::int64_t>(data.train.size()), c.batch,
                      {.seed = c.seed, .drop_last = true});
  order.shard(dist::rank(), dist::world_size());
  return order;
}

/// --resume's checkpoint loaded into the model, the optimizer and the data order. Returns the
/// step to go on from (0 without one).
template <class T, class Opt>
std::int64_t resume(const PretrainConfig& c, const trainer::RunFiles& files,
                    BertForPreTraining<T>& model, Opt& opt, data::Batches& order) {
  const auto p = trainer::resume_from(c.resume, files, model, opt, "bert_pretrain", !c.eval_only);
  if (!p) return 0;
  const std::filesystem::path from = trainer::resume_path(c.resume, files.checkpoint());
  order.restore(p->epoch, batch_position(*p, from));
  printf0("resumed from %s at step %lld\n", from.string().c_str(), static_cast<long long>(p->step));
  return p->step;
}

}  // namespace bert
