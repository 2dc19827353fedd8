// BERT pretraining (examples/bert): masked LM + next-sentence prediction, MLPerf's language
// workload, written to be read top to bottom. pretrain.cpp (host compiler) and pretrain.cu (nvcc,
// which can also train on the GPU) are this file and a main(); options.cpp reads the command line
// into the options (options.hpp).
//
//   bert_pretrain                                   # tiny BERT on Debian's GCIDE dictionary
//   bert_pretrain --config base --batch-size 64 --accumulation 4 --precision bf16
//   bert_pretrain --corpus a.txt,b.txt              # Google's format: a sentence per line
//   bert_pretrain --init-checkpoint model.safetensors   # start from Hugging Face weights
//   bert_pretrain --resume auto --eval-only             # evaluate the last checkpoint
//
// The run: the corpus is read, split into sentences, tokenized with the WordPiece vocabulary and
// made into sentence pairs with 15% of their tokens masked (pretraining_data.hpp), once; the
// instances are cached in a binary file under --cache-dir and loaded from there afterwards. A
// held-out slice is the evaluation set. The model is BertForPreTraining (bert.hpp); LAMB (MLPerf's
// optimizer) or AdamW with warmup and linear decay, the gradient clipped to norm 1 and, with
// --accumulation N, summed over N micro-batches per step. bf16 on the GPU (float master weights
// in the optimizer), float on the CPU.
//
// Reports: sequences/s after warm-up, masked-LM accuracy (MLPerf's target metric) and
// next-sentence accuracy on the evaluation set next to the unigram baseline (always guessing the
// most frequent masked token), the time to --target-mlm-accuracy; metrics.jsonl, MLPerf-style
// mllog.txt and curves.png under --out; a checkpoint at every evaluation (--resume auto).
//
// Data-parallel under mpirun (`mpirun -np 4 bert_pretrain ...`): --batch-size is the global
// micro-batch, each rank takes its part of it, DistributedDataParallel averages the gradients
// (once per step: the micro-batches before the last accumulate locally), evaluation is sharded
// and its counts summed; rank 0 alone prints and writes the files (docs/distributed.md).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <ember/data/batches.hpp>
#include <ember/data/wordpiece.hpp>
#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>
#include <ember/io/metrics_log.hpp>
#include <ember/io/progress.hpp>
#include <ember/io/safetensors.hpp>
#include <ember/optim/adamw.hpp>
#include <ember/optim/lamb.hpp>
#include <ember/optim/schedule.hpp>

#include "bert.hpp"
#include "common/format.hpp"
#include "common/run_support.hpp"
#include "common/training_run.hpp"
#include "options.hpp"
#include "pretraining_data.hpp"

namespace bert {

using namespace ember;
using trainer::hms;
using trainer::printf0;
using trainer::seconds_since;
using trainer::wait_for_device;

inline std::filesystem::path default_vocab() {
  return std::filesystem::path(EMBER_SOURCE_DIR) / "tests" / "data" / "wordpiece_vocab.txt";
}

inline void settle_pretrain_defaults(PretrainConfig& c, Device device) {
  if (c.vocab.empty()) c.vocab = default_vocab().string();
  if (c.precision == "auto") c.precision = device.is_cpu() ? "float" : "bf16";
  EMBER_CHECK(!device.is_cpu() || c.precision != "bf16" || cpu_has_avx512_bf16(),
              "bert_pretrain: --precision bf16 on the CPU needs AVX512-BF16, which this CPU lacks "
              "(use --precision float)");
  if (c.lr == 0) c.lr = c.optimizer == "adamw" ? 1e-3 : 5e-3;
  if (c.cache_dir.empty()) c.cache_dir = (std::filesystem::path(c.out) / "cache").string();
}

/// Every option checked before the corpus is read or the model built (after
/// settle_pretrain_defaults): an ember::Error naming the option and what it takes.
inline void validate_options(const PretrainConfig& c) {
  (void)config_by_name(c.config);  // its error lists the configurations
  EMBER_CHECK(!c.corpus.empty(), "bert_pretrain: --corpus must be gcide, synthetic or text files");
  EMBER_CHECK(std::filesystem::exists(c.vocab), "bert_pretrain: --vocab: no file '", c.vocab, "'");
  EMBER_CHECK(c.optimizer == "lamb" || c.optimizer == "adamw",
              "bert_pretrain: --optimizer must be lamb or adamw, got '", c.optimizer, "'");
  EMBER_CHECK(c.precision == "float" || c.precision == "bf16",
              "bert_pretrain: --precision must be float, bf16 or auto, got '", c.precision, "'");
  EMBER_CHECK(c.seq_len >= 8, "bert_pretrain: --seq-len must be at least 8, got ", c.seq_len);
  EMBER_CHECK(c.max_predictions > 0 && c.max_predictions < c.seq_len,
              "bert_pretrain: --max-predictions must be in [1, seq-len), got ", c.max_predictions);
  EMBER_CHECK(c.max_documents >= 0, "bert_pretrain: --max-documents must be >= 0, got ",
              c.max_documents);
  EMBER_CHECK(c.dupe_factor > 0, "bert_pretrain: --dupe-factor must be positive, got ",
              c.dupe_factor);
  EMBER_CHECK(c.eval_sequences > 0, "bert_pretrain: --eval-sequences must be positive, got ",
              c.eval_sequences);
  EMBER_CHECK(c.batch > 0, "bert_pretrain: --batch-size must be positive, got ", c.batch);
  EMBER_CHECK(c.accumulation > 0, "bert_pretrain: --accumulation must be positive, got ",
              c.accumulation);
  EMBER_CHECK(c.steps > 0, "bert_pretrain: --steps must be positive, got ", c.steps);
  EMBER_CHECK(c.warmup >= 0 && c.warmup < 1,
              "bert_pretrain: --warmup is a fraction in [0, 1), got ", c.warmup);
  EMBER_CHECK(c.lr > 0 && std::isfinite(c.lr), "bert_pretrain: --lr must be positive, got ", c.lr);
  EMBER_CHECK(c.weight_decay >= 0, "bert_pretrain: --weight-decay must be >= 0, got ",
              c.weight_decay);
  EMBER_CHECK(c.max_grad_norm >= 0, "bert_pretrain: --max-grad-norm must be >= 0, got ",
              c.max_grad_norm);
  EMBER_CHECK(c.eval_every > 0, "bert_pretrain: --eval-every must be positive, got ", c.eval_every);
  EMBER_CHECK(c.target_mlm_accuracy >= 0 && c.target_mlm_accuracy <= 1,
              "bert_pretrain: --target-mlm-accuracy is a fraction in (0, 1], got ",
              c.target_mlm_accuracy);
  EMBER_CHECK(c.init_checkpoint.empty() || std::filesystem::exists(c.init_checkpoint),
              "bert_pretrain: --init-checkpoint: no file '", c.init_checkpoint, "'");
  EMBER_CHECK(!c.eval_only || !c.init_checkpoint.empty() || !c.resume.empty(),
              "bert_pretrain: --eval-only needs the weights: --init-checkpoint FILE or --resume");
  EMBER_CHECK(c.stop_after >= 0, "bert_pretrain: --stop-after must be >= 0, got ", c.stop_after);
  EMBER_CHECK(c.log_every > 0, "bert_pretrain: --log-every must be positive, got ", c.log_every);
  if (!c.summary) {
    // The run's files go to --out; the tokenized corpus is cached (in OUT/cache unless
    // --cache-dir says otherwise) even for --eval-only.
    if (!c.eval_only) trainer::require_writable_directory(c.out, "bert_pretrain", "--out");
    trainer::require_writable_directory(c.cache_dir, "bert_pretrain", "--cache-dir");
  }
}

// ---- Data ---------------------------------------------------------------------------------------

/// Training and evaluation instances, and what the report compares against.
struct PretrainData {
  std::vector<Instance> train, eval;
  /// The share of the evaluation set's masked tokens equal to the training set's most frequent
  /// masked token: the masked-LM accuracy of a model that learned only the unigram distribution.
  double unigram_baseline = 0;
};

/// `count` random full-length instances ([CLS], A and B of random non-special tokens, two [SEP],
/// max_predictions masked): the corpus of --corpus synthetic, for raw throughput, like the ResNet
/// trainer's synthetic images. Nothing in them can be learned beyond the unigram distribution.
inline std::vector<Instance> synthetic_instances(std::int64_t count, const PretrainingOptions& o,
                                                 const data::WordPieceTokenizer& tokenizer) {
  const auto S = static_cast<std::int32_t>(o.seq_len);
  const auto P = static_cast<std::int32_t>(std::min<std::int64_t>(o.max_predictions, S - 3));
  // Ids past the special and unused tokens of BERT's vocabularies ([unused*] end at 998).
  const std::int32_t low = tokenizer.vocab_size() > 2000 ? 999 : 5;
  const auto span = static_cast<std::uint64_t>(tokenizer.vocab_size() - low);
  detail::pt::Rng rng(o.seed, /*stream=*/0x5e7);
  std::vector<Instance> out(static_cast<std::size_t>(count));
  for (Instance& in : out) {
    const std::int32_t first_sep = 1 + (S - 3) / 2;
    for (std::int32_t t = 0; t < S; ++t) {
      const bool special = t == 0 || t == first_sep || t == S - 1;
      in.input_ids.push_back(
          special ? static_cast<std::int32_t>(t == 0 ? tokenizer.cls_id() : tokenizer.sep_id())
                  : low + static_cast<std::int32_t>(rng.below(span)));
      in.token_type_ids.push_back(t > first_sep ? 1 : 0);
    }
    for (std::int32_t k = 0; k < P; ++k) {
      // Evenly spread positions, none of them special.
      std::int32_t pos = 1 + k * (S - 2) / P;
      if (pos == first_sep) ++pos;
      in.masked_positions.push_back(pos);
      in.masked_ids.push_back(in.input_ids[static_cast<std::size_t>(pos)]);
      in.input_ids[static_cast<std::size_t>(pos)] = static_cast<std::int32_t>(tokenizer.mask_id());
    }
    in.random_next = (rng.next32() & 1) != 0;
  }
  return out;
}

inline PretrainData open_pretrain_data(const PretrainConfig& c,
                                       const data::WordPieceTokenizer& tokenizer) {
  PretrainingOptions po;
  po.seq_len = c.seq_len;
  po.max_predictions = c.max_predictions;
  po.dupe_factor = c.dupe_factor;
  po.seed = c.seed;
  const auto t0 = std::chrono::steady_clock::now();
  PretrainData d;
  if (c.corpus == "synthetic") {
    d.train = synthetic_instances(c.max_documents > 0 ? c.max_documents : 8192, po, tokenizer);
    po.seed += 1;
    d.eval = synthetic_instances(c.eval_sequences, po, tokenizer);
  } else {
    const std::filesystem::path gcide = "/usr/share/dictd/gcide.dict.dz";
    std::vector<std::filesystem::path> files;
    if (c.corpus == "gcide") {
      EMBER_CHECK(std::filesystem::exists(gcide), "bert_pretrain: ", gcide.string(),
                  " is missing: apt-get install dict-gcide (or pass --corpus FILES)");
      files.push_back(gcide);
    } else {
      std::string rest = c.corpus;
      while (!rest.empty()) {
        const std::size_t at = rest.find(',');
        files.emplace_back(rest.substr(0, at));
        rest = at == std::string::npos ? "" : rest.substr(at + 1);
      }
    }
    // Whole documents are held out (2% of them), so no evaluation text is trained on. Each
    // split is made once and cached; a second run loads both.
    const auto read_split = [&](bool eval) {
      const std::int64_t most = c.max_documents > 0 ? c.max_documents : -1;
      std::vector<Document> docs;
      if (c.corpus == "gcide") {
        // A dictionary entry holds 2.4 sentences on average: neighbouring entries are joined
        // into documents of at least 10 sentences, so most sentence pairs are real ones.
        docs = merge_short_documents(read_gcide(gcide, most), 10);
      } else {
        docs = read_text_documents(files);
        if (most > 0 && static_cast<std::int64_t>(docs.size()) > most) docs.resize(most);
      }
      DocumentSplit split = split_documents(std::move(docs), 0.02, c.seed);
      printf0("corpus: %zu training and %zu evaluation documents\n", split.train.size(),
              split.eval.size());
      return eval ? std::move(split.eval) : std::move(split.train);
    };
    for (const bool eval : {false, true}) {
      CacheInfo cache;
      std::vector<Instance> part = cached_instances(
          c.cache_dir,
          corpus_identity(files, c.corpus + (eval ? " eval" : " train") +
                                     " max_documents=" + std::to_string(c.max_documents)),
          tokenizer, po, [&] { return read_split(eval); }, &cache);
      printf0("%s instances %s %s\n", eval ? "evaluation" : "training",
              cache.loaded ? "loaded from" : "made and cached in", cache.file.string().c_str());
      (eval ? d.eval : d.train) = std::move(part);
    }
    if (static_cast<std::int64_t>(d.eval.size()) > c.eval_sequences)
      d.eval.resize(c.eval_sequences);
  }
  printf0("instances: %zu training and %zu evaluation sequences of up to %lld tokens (%.1f s)\n",
          d.train.size(), d.eval.size(), static_cast<long long>(c.seq_len), seconds_since(t0));
  EMBER_CHECK(static_cast<std::int64_t>(d.train.size()) >= c.batch && !d.eval.empty(),
              "bert_pretrain: the corpus gave ", d.train.size(), " training and ", d.eval.size(),
              " evaluation sequences: too few for batches of ", c.batch);

  std::map<std::int32_t, std::int64_t> counts;
  for (const Instance& in : d.train) {
    for (const std::int32_t id : in.masked_ids) ++counts[id];
  }
  const auto most =
      std::max_element(counts.begin(), counts.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  std::int64_t hits = 0, total = 0;
  for (const Instance& in : d.eval) {
    for (const std::int32_t id : in.masked_ids) {
      hits += most != counts.end() && id == most->first;
      ++total;
    }
  }
  d.unigram_baseline = total > 0 ? static_cast<double>(hits) / static_cast<double>(total) : 0;
  return d;
}

/// The batch of `indices`, on `device`.
inline PretrainingBatch batch_on(const std::vector<Instance>& instances,
                                 std::span<const std::int64_t> indices, const PretrainConfig& c,
                                 Device device) {
  // Fixed shapes: every batch is [B, seq_len] with max_predictions slots.
  PretrainingBatch b =
      make_batch(instances, indices, {.seq_len = c.seq_len, .max_predictions = c.max_predictions});
  if (device.is_cpu()) return b;
  for (Tensor<std::int64_t>* t : {&b.input_ids, &b.token_type_ids, &b.attention_mask,
                                  &b.masked_positions, &b.masked_ids, &b.next_sentence_labels}) {
    *t = t->to(device);
  }
  return b;
}

// ---- Evaluation ---------------------------------------------------------------------------------

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

// ---- Training -----------------------------------------------------------------------------------

struct PretrainResult {
  double sequences_per_second = 0;
  PretrainEval last;
  double unigram_baseline = 0;
  double seconds_to_target = -1;
  double train_seconds = 0;
  std::int64_t steps = 0;
};

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

/// evaluate() within MLPerf's eval interval at `step`, its accuracy logged.
template <class T>
PretrainEval evaluate_step(BertForPreTraining<T>& model, const PretrainData& data,
                           const PretrainConfig& c, Device device, std::int64_t step,
                           trainer::RunFiles& files) {
  const io::LogFields at{{"step", step}};
  files.mllog().start(io::mllog::kEvalStart, nullptr, at);
  const PretrainEval e = evaluate(model, data.eval, c, device);
  files.mllog().event(io::mllog::kEvalAccuracy, e.mlm_accuracy, at);
  files.mllog().end(io::mllog::kEvalStop, nullptr, at);
  return e;
}

/// An evaluation in metrics.jsonl and on stdout.
inline void report_eval(trainer::RunFiles& files, std::int64_t step, const PretrainEval& e,
                        double unigram_baseline, double elapsed, bool quiet) {
  files.metrics(step, {{"eval_mlm_accuracy", e.mlm_accuracy},
                       {"eval_nsp_accuracy", e.nsp_accuracy},
                       {"eval_mlm_loss", e.mlm_loss},
                       {"eval_nsp_loss", e.nsp_loss},
                       {"time_s", elapsed}});
  if (quiet) return;
  if (files.lead()) std::fprintf(stderr, "\n");
  printf0(
      "step %lld: masked-LM accuracy %.2f%% (unigram baseline %.2f%%), next sentence %.2f%%, "
      "eval loss %.3f + %.3f, %s elapsed\n",
      static_cast<long long>(step), 100 * e.mlm_accuracy, 100 * unigram_baseline,
      100 * e.nsp_accuracy, e.mlm_loss, e.nsp_loss, hms(elapsed).c_str());
  std::fflush(stdout);
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

/// The checkpoint --resume names.
inline std::filesystem::path resume_path(const PretrainConfig& c, const trainer::RunFiles& files) {
  return c.resume == "auto" ? files.checkpoint() : std::filesystem::path(c.resume);
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
  if (c.accumulation > 1) opt.scale_grads(1.0 / static_cast<double>(c.accumulation));
  if (c.max_grad_norm > 0) opt.clip_grad_norm(c.max_grad_norm);
  ember::fault_point("train-step");  // tests/examples/kill_check.sh may kill the run here
  opt.set_lr(lr);
  opt.step();
  opt.zero_grad();
  return out;
}

/// The losses after `step` in metrics.jsonl and on the progress bar (reading them waits for the
/// device: only every --log-every steps).
template <class T>
void log_step(trainer::RunFiles& files, io::ProgressBar& bar, std::int64_t step,
              const PreTrainingOutput<T>& out, double lr) {
  const double l = trainer::step_loss(out.loss, step, "bert_pretrain");
  files.metrics(
      step,
      {{"loss", l},
       {"mlm_loss", trainer::mean_over_ranks(static_cast<double>(out.mlm_loss.value().item()))},
       {"nsp_loss", trainer::mean_over_ranks(static_cast<double>(out.nsp_loss.value().item()))},
       {"lr", lr}});
  bar.update(step, {{"loss", l}, {"lr", lr}});
}

template <class T, class Opt>
PretrainResult pretrain(const PretrainConfig& c, const PretrainData& data,
                        const data::WordPieceTokenizer& tokenizer, Device device,
                        bool quiet = false) {
  trainer::RunFiles files(c.out, io::mllog::kBert);
  std::optional<ember::detect_anomaly> anomaly;  // this thread, while the run lasts
  if (c.detect_anomaly) anomaly.emplace();

  // The model, in the compute type T, on the device; its optimizer and schedule.
  nn::manual_seed(c.seed);
  BertForPreTraining<T> model(model_config(c, tokenizer), device);
  if (!c.init_checkpoint.empty()) load_hugging_face(model, c.init_checkpoint);
  Opt opt = make_optimizer<Opt>(model, c);
  const optim::Schedule schedule = make_schedule(c);

  data::Batches order(static_cast<std::int64_t>(data.train.size()), c.batch, true, c.seed, true);
  order.shard(dist::rank(), dist::world_size());  // this rank's part of every batch
  std::int64_t step = 0;
  if (const auto p =
          trainer::resume_from(c.resume, files, model, opt, "bert_pretrain", !c.eval_only)) {
    step = p->step;
    order.restore(p->epoch, batch_position(*p, resume_path(c, files)));
    printf0("resumed from %s at step %lld\n", resume_path(c, files).string().c_str(),
            static_cast<long long>(step));
  }
  PretrainResult result;
  result.unigram_baseline = data.unigram_baseline;
  if (c.eval_only) {  // the weights of --init-checkpoint or --resume, evaluated
    result.steps = step;
    result.last = evaluate(model, data.eval, c, device);
    return result;
  }

  // Every rank starts from rank 0's weights and averages its gradients with the others'.
  dist::DistributedDataParallel ddp(model);
  files.start_run({device, c.batch * c.accumulation,
                   std::is_same_v<Opt, optim::LAMB> ? "lamb" : "adamw", c.lr, c.seed,
                   static_cast<std::int64_t>(data.train.size()),
                   static_cast<std::int64_t>(data.eval.size())});
  const auto run_start = std::chrono::steady_clock::now();
  trainer::Throughput throughput(trainer::warm_up_steps(c.steps), device);
  io::ProgressBar bar = files.progress_bar(c.steps, "bert", quiet);
  for (const std::int64_t first_step = step; step < c.steps;) {
    throughput.before_step(step - first_step);
    const double lr = schedule(step);
    const PreTrainingOutput<T> out = train_step(model, opt, ddp, order, data, c, device, step, lr);
    ++step;
    throughput.count(c.batch * c.accumulation);  // global: every rank's part
    if (step % c.log_every == 0 || step == c.steps) log_step(files, bar, step, out, lr);
    const bool last = step == c.steps || (c.stop_after > 0 && step >= c.stop_after);
    if (step % c.eval_every == 0 || last) {
      throughput.pause();
      result.last = evaluate_step(model, data, c, device, step, files);
      const double elapsed = seconds_since(run_start);
      report_eval(files, step, result.last, data.unigram_baseline, elapsed, quiet);
      files.save(model, opt, checkpoint_progress(step, order));
      if (c.target_mlm_accuracy > 0 && result.last.mlm_accuracy >= c.target_mlm_accuracy &&
          result.seconds_to_target < 0) {
        result.seconds_to_target = elapsed;
      }
      throughput.resume();
    }
    if (last) break;
  }
  bar.finish();
  result.steps = step;
  result.sequences_per_second = throughput.per_second();
  result.train_seconds = seconds_since(run_start);
  files.stop_run(c.target_mlm_accuracy <= 0 || result.seconds_to_target >= 0);
  return result;
}

// ---- The program --------------------------------------------------------------------------------

template <class T>
PretrainResult dispatch_optimizer(const PretrainConfig& c, const PretrainData& data,
                                  const data::WordPieceTokenizer& tokenizer, Device device,
                                  bool quiet) {
  if (c.optimizer == "adamw") return pretrain<T, optim::AdamW>(c, data, tokenizer, device, quiet);
  EMBER_CHECK(c.optimizer == "lamb", "bert_pretrain: --optimizer must be lamb or adamw, got '",
              c.optimizer, "'");
  return pretrain<T, optim::LAMB>(c, data, tokenizer, device, quiet);
}

inline PretrainResult run_pretraining(const PretrainConfig& c, const PretrainData& data,
                                      const data::WordPieceTokenizer& tokenizer, Device device,
                                      bool quiet = false) {
  EMBER_CHECK(
      c.batch > 0 && c.accumulation > 0 && c.steps > 0 && c.eval_every > 0 && c.log_every > 0,
      "bert_pretrain: --batch-size, --accumulation, --steps, --eval-every and --log-every "
      "must be positive");
  if (c.precision == "bf16") return dispatch_optimizer<bf16>(c, data, tokenizer, device, quiet);
  EMBER_CHECK(c.precision == "float",
              "bert_pretrain: --precision must be float, bf16 or auto, got '", c.precision, "'");
  return dispatch_optimizer<float>(c, data, tokenizer, device, quiet);
}

/// The configuration's table: the modules with their parameter counts.
inline void print_summary(const BertConfig& bc) {
  const BertForPreTraining<float> model(bc);
  printf0(
      "BertForPreTraining: hidden %lld, layers %lld, heads %lld, intermediate %lld, "
      "vocab %lld\n",
      static_cast<long long>(bc.hidden), static_cast<long long>(bc.layers),
      static_cast<long long>(bc.heads), static_cast<long long>(bc.intermediate),
      static_cast<long long>(bc.vocab_size));
  printf0("%-44s %14s\n", "module", "parameters");
  for (const auto& [name, m] : model.named_modules()) {
    // The first two levels below the heads, and each encoder layer once.
    const auto depth = std::count(name.begin(), name.end(), '.');
    if (depth > 2 || (name.rfind("bert.encoder.layer.", 0) == 0 && depth > 3)) continue;
    printf0("%-44s %14s\n", name.c_str(), trainer::thousands(m->parameter_count()).c_str());
  }
  printf0("Encoder with pooler (BertModel): %s params\n",
          trainer::thousands(model.bert.parameter_count()).c_str());
  printf0("Total params: %s\n", trainer::thousands(model.parameter_count()).c_str());
}

inline int main(int argc, char** argv) {
  trainer::quiet_blas_threads(argv);
  trainer::report_file_size_limit_as_error();
  // Then: under mpirun this joins the other ranks (MPI may take its own arguments out of argv).
  dist::World world = dist::init(argc, argv);
  PretrainConfig c;
  if (const auto status = parse_options(c, argc, argv)) return *status;
  Device device = Device::cpu();
  if (const auto status = trainer::check_options([&] {
        device = trainer::pick_device(c.device, "bert_pretrain", world.local_rank());
        settle_pretrain_defaults(c, device);
        validate_options(c);
        trainer::check_batch_splits(c.batch, world.size(), "global micro-batch", "bert_pretrain");
      })) {
    return *status;
  }

  try {
    if (c.summary) {
      BertConfig bc = config_by_name(c.config);
      if (world.is_main()) print_summary(bc);
      return 0;
    }
    const data::WordPieceTokenizer tokenizer(c.vocab);
    printf0("ember BERT pretraining: %s, %s, batch %lld x %lld, seq %lld, %s, %s on %s\n",
            c.config.c_str(), c.corpus.c_str(), static_cast<long long>(c.batch),
            static_cast<long long>(c.accumulation), static_cast<long long>(c.seq_len),
            c.optimizer.c_str(), c.precision.c_str(), device.str().c_str());
    std::fflush(stdout);
    // Rank 0 reads the corpus and caches its instances first; the others then load the cache.
    if (!world.is_main()) dist::barrier();
    const PretrainData data = open_pretrain_data(c, tokenizer);
    if (world.is_main()) dist::barrier();
    printf0("data: %zu training and %zu evaluation sequences; unigram baseline %.2f%%\n",
            data.train.size(), data.eval.size(), 100 * data.unigram_baseline);
    std::fflush(stdout);
    const PretrainResult r = run_pretraining(c, data, tokenizer, device);
    if (c.eval_only) {
      printf0("\n== evaluation ==\n");
      printf0("masked-LM accuracy: %.2f%% (unigram baseline %.2f%%)\n", 100 * r.last.mlm_accuracy,
              100 * r.unigram_baseline);
      printf0(
          "next-sentence accuracy: %.2f%%\neval loss: %.4f (masked LM) + %.4f (next "
          "sentence)\n",
          100 * r.last.nsp_accuracy, r.last.mlm_loss, r.last.nsp_loss);
      return 0;
    }
    printf0("\n== results ==\n");
    printf0("training throughput: %.1f sequences/s (after warm-up)\n", r.sequences_per_second);
    if (world.size() > 1) {
      printf0("per rank: %.1f sequences/s (%d ranks)\n", r.sequences_per_second / world.size(),
              world.size());
    }
    printf0("masked-LM accuracy: %.2f%% (unigram baseline %.2f%%)\n", 100 * r.last.mlm_accuracy,
            100 * r.unigram_baseline);
    printf0("next-sentence accuracy: %.2f%%\n", 100 * r.last.nsp_accuracy);
    printf0("training time: %s for %lld steps\n", hms(r.train_seconds).c_str(),
            static_cast<long long>(r.steps));
    if (c.target_mlm_accuracy > 0) {
      if (r.seconds_to_target >= 0) {
        printf0("time to %.2f%% masked-LM accuracy: %s\n", 100 * c.target_mlm_accuracy,
                hms(r.seconds_to_target).c_str());
      } else {
        printf0("target %.2f%% masked-LM accuracy not reached\n", 100 * c.target_mlm_accuracy);
      }
    }
    if (world.is_main()) {
      trainer::plot_curves(std::filesystem::path(c.out) / "metrics.jsonl",
                           std::filesystem::path(c.out) / "curves.png", "BERT pretraining");
    }
    return c.target_mlm_accuracy > 0 && r.seconds_to_target < 0 ? 3 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return trainer::kExitFailure;
  }
}

}  // namespace bert
