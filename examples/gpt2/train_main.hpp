// GPT-2 pretraining (examples/gpt2): next-token prediction on English prose, written to be read
// top to bottom. train.cpp (host compiler) and train.cu (nvcc, which can also train on the GPU)
// are this file and a main(); options.cpp reads the command line into the options (options.hpp).
//
//   gpt2_train --text kjv.txt                       # tiny GPT-2 on the King James Bible
//   gpt2_train --config 124M --batch-size 4 --seq-len 64 --steps 20
//   gpt2_train --resume auto --eval-only            # the last checkpoint's validation loss
//
// The run: --text is tokenized once with GPT-2's BPE (data/gpt2_bpe.hpp) into llm.c's token files
// (OUT/data/train.bin and val.bin: the last --val-fraction of the tokens held out), which
// --data can name directly afterwards (llm.c reads the same files). Batches are llm.c's:
// B consecutive windows of T tokens, the targets one token on (data/token_files.hpp). The model is
// GPT2LMHeadModel (gpt2.hpp); AdamW (weight decay on matrices only), linear warmup then a cosine
// to --min-lr, the gradient clipped to norm 1 and, with --accumulation N, summed over N
// micro-batches per step. bf16 on the GPU (float master weights in the optimizer), float on the
// CPU.
//
// Reports: tokens/s after warm-up, the validation loss and perplexity next to the unigram
// entropy of the training tokens (what a model that ignores the context reaches), samples from
// the trained model; metrics.jsonl, MLPerf-style mllog.txt and curves.png under --out; a
// checkpoint at every evaluation (--resume auto continues the same batches).
//
// Data-parallel under mpirun: --batch-size is the global micro-batch, each rank takes its part
// (rank r the r-th of each group of batches), DistributedDataParallel averages the gradients once
// per step; rank 0 alone prints and writes the files.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <ember/data/gpt2_bpe.hpp>
#include <ember/data/token_files.hpp>
#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>
#include <ember/io/metrics_log.hpp>
#include <ember/io/progress.hpp>
#include <ember/optim/adamw.hpp>
#include <ember/optim/schedule.hpp>

#include "common/format.hpp"
#include "common/run_support.hpp"
#include "common/training_run.hpp"
#include "gpt2.hpp"
#include "options.hpp"
#include "sampling.hpp"

namespace gpt2 {

using namespace ember;
using trainer::hms;
using trainer::printf0;
using trainer::seconds_since;

inline std::filesystem::path data_dir(const TrainConfig& c) {
  return c.data.empty() ? std::filesystem::path(c.out) / "data" : std::filesystem::path(c.data);
}

inline void settle_defaults(TrainConfig& c, Device device) {
  if (c.precision == "auto") c.precision = device.is_cpu() ? "float" : "bf16";
  EMBER_CHECK(!device.is_cpu() || c.precision != "bf16" || cpu_has_avx512_bf16(),
              "gpt2_train: --precision bf16 on the CPU needs AVX512-BF16, which this CPU lacks "
              "(use --precision float)");
  if (c.vocab.empty()) {
    if (const auto found = data::Gpt2Bpe::find_vocabulary()) c.vocab = found->string();
  }
}

/// Every option checked before the text is read or the model built (after settle_defaults): an
/// ember::Error naming the option and what it takes.
inline void validate_options(const TrainConfig& c) {
  (void)config_by_name(c.config);  // its error lists the configurations
  const std::filesystem::path dir = data_dir(c);
  EMBER_CHECK(
      !c.text.empty() || c.summary ||
          (std::filesystem::exists(dir / "train.bin") && std::filesystem::exists(dir / "val.bin")),
      "gpt2_train: no data: give --text FILE (tokenized into ", dir.string(),
      ") or --data DIR holding train.bin and val.bin");
  EMBER_CHECK(c.vocab.empty() || std::filesystem::exists(c.vocab), "gpt2_train: --vocab: no file '",
              c.vocab, "'");
  EMBER_CHECK(!c.vocab.empty() || (c.text.empty() && c.sample_tokens == 0) || c.summary,
              "gpt2_train: GPT-2's vocabulary not found: pip install --no-deps openai-whisper, or "
              "give --vocab gpt2.tiktoken");
  EMBER_CHECK(c.precision == "float" || c.precision == "bf16",
              "gpt2_train: --precision must be float, bf16 or auto, got '", c.precision, "'");
  EMBER_CHECK(c.val_fraction > 0 && c.val_fraction < 1,
              "gpt2_train: --val-fraction is a fraction in (0, 1), got ", c.val_fraction);
  EMBER_CHECK(c.batch > 0, "gpt2_train: --batch-size must be positive, got ", c.batch);
  EMBER_CHECK(c.seq_len > 0 && c.seq_len <= config_by_name(c.config).n_positions,
              "gpt2_train: --seq-len must be in [1, ", config_by_name(c.config).n_positions,
              "] for --config ", c.config, ", got ", c.seq_len);
  EMBER_CHECK(c.accumulation > 0, "gpt2_train: --accumulation must be positive, got ",
              c.accumulation);
  EMBER_CHECK(c.steps > 0, "gpt2_train: --steps must be positive, got ", c.steps);
  EMBER_CHECK(c.warmup >= 0 && c.warmup < 1, "gpt2_train: --warmup is a fraction in [0, 1), got ",
              c.warmup);
  EMBER_CHECK(c.lr > 0 && std::isfinite(c.lr), "gpt2_train: --lr must be positive, got ", c.lr);
  EMBER_CHECK(c.min_lr >= 0 && c.min_lr <= 1,
              "gpt2_train: --min-lr is a fraction of --lr in "
              "[0, 1], got ",
              c.min_lr);
  EMBER_CHECK(c.weight_decay >= 0, "gpt2_train: --weight-decay must be >= 0, got ", c.weight_decay);
  EMBER_CHECK(c.max_grad_norm >= 0, "gpt2_train: --max-grad-norm must be >= 0, got ",
              c.max_grad_norm);
  EMBER_CHECK(c.dropout >= 0 && c.dropout < 1, "gpt2_train: --dropout must be in [0, 1), got ",
              c.dropout);
  EMBER_CHECK(c.eval_every > 0 && c.eval_batches > 0 && c.log_every > 0,
              "gpt2_train: --eval-every, --eval-batches and --log-every must be positive");
  EMBER_CHECK(c.sample_tokens >= 0, "gpt2_train: --sample-tokens must be >= 0, got ",
              c.sample_tokens);
  EMBER_CHECK(c.stop_after >= 0, "gpt2_train: --stop-after must be >= 0, got ", c.stop_after);
  trainer::require_writable_directory(c.out, "gpt2_train", "--out");
}

// ---- Data -----------------------------------------------------------------------------------

/// The training and validation tokens, and the unigram entropy of the training tokens (nats):
/// the loss of a model that predicts every token from its frequency alone.
struct Corpus {
  std::vector<std::uint16_t> train, val;
  double unigram_entropy = 0;
};

/// --text's tokens ([end of text] first, as llm.c's files start) into train.bin and val.bin.
inline void write_token_files(const TrainConfig& c, const data::Gpt2Bpe& bpe) {
  std::ifstream in(c.text, std::ios::binary);
  EMBER_CHECK(in, "gpt2_train: cannot read --text '", c.text, "'");
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<std::int32_t> ids{data::Gpt2Bpe::kEndOfText};
  const std::vector<std::int32_t> body = bpe.encode(text.str());
  ids.insert(ids.end(), body.begin(), body.end());
  const auto held_out =
      static_cast<std::size_t>(std::ceil(c.val_fraction * static_cast<double>(ids.size())));
  const std::size_t split = ids.size() - std::min(held_out, ids.size());
  const std::filesystem::path dir = data_dir(c);
  std::filesystem::create_directories(dir);
  data::write_token_file(dir / "train.bin", std::span(ids).first(split));
  data::write_token_file(dir / "val.bin", std::span(ids).subspan(split));
  printf0("tokenized %s: %zu characters, %zu tokens (%zu held out) into %s\n", c.text.c_str(),
          text.str().size(), ids.size(), ids.size() - split, dir.string().c_str());
}

inline Corpus open_corpus(const TrainConfig& c) {
  // Rank 0 tokenizes --text first; the others then read its files.
  if (!c.text.empty()) {
    if (dist::rank() == 0) write_token_files(c, data::Gpt2Bpe::from_tiktoken(c.vocab));
    dist::barrier();
  }
  Corpus corpus{data::read_token_file(data_dir(c) / "train.bin"),
                data::read_token_file(data_dir(c) / "val.bin")};
  std::map<std::uint16_t, std::int64_t> counts;
  for (const std::uint16_t t : corpus.train) ++counts[t];
  for (const auto& [token, n] : counts) {
    const double p = static_cast<double>(n) / static_cast<double>(corpus.train.size());
    corpus.unigram_entropy -= p * std::log(p);
  }
  return corpus;
}

// ---- Training -------------------------------------------------------------------------------

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
  if (c.accumulation > 1) opt.scale_grads(1.0 / static_cast<double>(c.accumulation));
  if (c.max_grad_norm > 0) opt.clip_grad_norm(c.max_grad_norm);
  ember::fault_point("train-step");
  opt.set_lr(lr);
  opt.step();
  opt.zero_grad();
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

struct TrainResult {
  std::int64_t steps = 0;
  double val_loss = NAN;
  double tokens_per_second = 0;
  double train_seconds = 0;
};

/// The run: --resume's checkpoint, then the steps with their evaluations and checkpoints, then
/// the samples. `opt` is AdamW, or its ZeRO-1 sharding.
template <class T, class Optimizer>
TrainResult train(GPT2LMHeadModel<T>& model, Optimizer& opt, const TrainConfig& c,
                  const Corpus& corpus, Device device) {
  trainer::RunFiles files(c.out, "gpt2");
  const optim::Schedule schedule = make_schedule(c);
  const std::int64_t B = c.batch / dist::world_size();
  data::TokenBatches batches(corpus.train, B, c.seq_len, dist::rank(), dist::world_size());

  std::int64_t step = 0;
  if (const auto p =
          trainer::resume_from(c.resume, files, model, opt, "gpt2_train", !c.eval_only)) {
    step = p->step;
    const auto position = p->extra.find("batch_position");
    EMBER_CHECK(position != p->extra.end(),
                "gpt2_train: the checkpoint is not gpt2_train's (it has no batch_position)");
    batches.seek(std::stoll(position->second));
    printf0("resumed at step %lld\n", static_cast<long long>(step));
  }
  TrainResult result;
  if (c.eval_only) {
    result.steps = step;
    result.val_loss = evaluate(model, corpus, c, device);
    return result;
  }

  dist::DistributedDataParallel ddp(model);  // every rank starts from rank 0's weights
  const std::int64_t tokens_per_step = c.batch * c.seq_len * c.accumulation;
  files.start_run({device, c.batch * c.accumulation, "adamw", c.lr, c.seed,
                   static_cast<std::int64_t>(corpus.train.size()),
                   static_cast<std::int64_t>(corpus.val.size())});
  const auto run_start = std::chrono::steady_clock::now();
  trainer::Throughput throughput(trainer::warm_up_steps(c.steps), device);
  io::ProgressBar bar = files.progress_bar(c.steps, "gpt2", false);
  for (const std::int64_t first_step = step; step < c.steps;) {
    throughput.before_step(step - first_step);
    const double lr = schedule(step);
    const Var<T> loss = train_step(model, opt, ddp, batches, c, device, step, lr);
    ++step;
    throughput.count(tokens_per_step);
    if (step % c.log_every == 0 || step == c.steps) {
      const double l = trainer::step_loss(loss, step, "gpt2_train");
      files.metrics(step, {{"loss", l}, {"lr", lr}});
      bar.update(step, {{"loss", l}, {"lr", lr}});
    }
    const bool last = step == c.steps || (c.stop_after > 0 && step >= c.stop_after);
    if (step % c.eval_every == 0 || last) {
      throughput.pause();
      result.val_loss = evaluate(model, corpus, c, device);
      files.metrics(step,
                    {{"val_loss", result.val_loss}, {"val_perplexity", std::exp(result.val_loss)}});
      printf0("\nstep %lld: validation loss %.4f, perplexity %.2f (unigram entropy %.4f)\n",
              static_cast<long long>(step), result.val_loss, std::exp(result.val_loss),
              corpus.unigram_entropy);
      files.save(model, opt, checkpoint_progress(step, batches));
      throughput.resume();
    }
    if (last) break;
  }
  bar.finish();
  result.steps = step;
  result.tokens_per_second = throughput.per_second();
  result.train_seconds = seconds_since(run_start);
  files.stop_run(true);
  if (c.sample_tokens > 0 && dist::rank() == 0) {
    const data::Gpt2Bpe bpe = data::Gpt2Bpe::from_tiktoken(c.vocab);
    printf0("\n== sample (%lld tokens) ==\n%s\n", static_cast<long long>(c.sample_tokens),
            sample(model, bpe, c.sample_tokens, c.seed, device).c_str());
  }
  return result;
}

/// The model, in the compute type T, on the device, and its optimizer; then the run.
template <class T>
TrainResult train(const TrainConfig& c, const Corpus& corpus, Device device) {
  nn::manual_seed(c.seed);
  GPT2Config config = config_by_name(c.config);
  config.dropout = c.dropout;
  GPT2LMHeadModel<T> model(config, device);
  if (c.zero) {
    dist::ZeroRedundancyOptimizer<optim::AdamW> opt(adamw_groups(model, c));
    return train(model, opt, c, corpus, device);
  }
  optim::AdamW opt(adamw_groups(model, c));
  return train(model, opt, c, corpus, device);
}

// ---- The program --------------------------------------------------------------------------

/// The configuration's table: the modules with their parameter counts.
inline void print_summary(const GPT2Config& gc) {
  const GPT2LMHeadModel<float> model(gc);
  printf0("GPT2LMHeadModel: n_embd %lld, n_layer %lld, n_head %lld, n_positions %lld, vocab %lld\n",
          static_cast<long long>(gc.n_embd), static_cast<long long>(gc.n_layer),
          static_cast<long long>(gc.n_head), static_cast<long long>(gc.n_positions),
          static_cast<long long>(gc.vocab_size));
  printf0("%-36s %14s\n", "module", "parameters");
  const auto starts = [](const std::string& name, const char* prefix) {
    return name.rfind(prefix, 0) == 0;
  };
  for (const auto& [name, m] : model.named_modules()) {
    // The first block in full, the others a line each.
    const auto depth = std::count(name.begin(), name.end(), '.');
    const bool first_block = starts(name, "transformer.h.0.") || name == "transformer.h.0";
    if (depth > 3 || (starts(name, "transformer.h.") && !first_block && depth > 2)) continue;
    printf0("%-36s %14s\n", name.c_str(), trainer::thousands(m->parameter_count()).c_str());
  }
  printf0("Total params: %s (the LM head is transformer.wte)\n",
          trainer::thousands(model.parameter_count()).c_str());
}

inline int main(int argc, char** argv) {
  trainer::quiet_blas_threads(argv);
  trainer::report_file_size_limit_as_error();
  dist::World world = dist::init(argc, argv);
  TrainConfig c;
  if (const auto status = parse_options(c, argc, argv)) return *status;
  Device device = Device::cpu();
  if (const auto status = trainer::check_options([&] {
        device = trainer::pick_device(c.device, "gpt2_train", world.local_rank());
        settle_defaults(c, device);
        validate_options(c);
        trainer::check_batch_splits(c.batch, world.size(), "global micro-batch", "gpt2_train");
      })) {
    return *status;
  }
  try {
    if (c.summary) {
      if (world.is_main()) print_summary(config_by_name(c.config));
      return 0;
    }
    printf0("ember GPT-2 pretraining: %s, batch %lld x %lld, seq %lld, %s on %s\n",
            c.config.c_str(), static_cast<long long>(c.batch),
            static_cast<long long>(c.accumulation), static_cast<long long>(c.seq_len),
            c.precision.c_str(), device.str().c_str());
    const Corpus corpus = open_corpus(c);
    EMBER_CHECK(static_cast<std::int64_t>(corpus.val.size()) > c.batch * c.seq_len,
                "gpt2_train: ", corpus.val.size(),
                " validation tokens are too few for one batch of ", c.batch, " x ", c.seq_len,
                ": raise --val-fraction or lower --batch-size");
    printf0("data: %zu training and %zu validation tokens; unigram entropy %.4f nats\n",
            corpus.train.size(), corpus.val.size(), corpus.unigram_entropy);
    const TrainResult r =
        c.precision == "bf16" ? train<bf16>(c, corpus, device) : train<float>(c, corpus, device);
    if (c.eval_only) {
      printf0("\n== evaluation ==\nvalidation loss: %.4f, perplexity %.2f (unigram entropy %.4f)\n",
              r.val_loss, std::exp(r.val_loss), corpus.unigram_entropy);
      return 0;
    }
    printf0("\n== results ==\n");
    printf0("training throughput: %.0f tokens/s (after warm-up)\n", r.tokens_per_second);
    printf0("validation loss: %.4f, perplexity %.2f (unigram entropy %.4f nats)\n", r.val_loss,
            std::exp(r.val_loss), corpus.unigram_entropy);
    printf0("training time: %s for %lld steps\n", hms(r.train_seconds).c_str(),
            static_cast<long long>(r.steps));
    if (world.is_main()) {
      trainer::plot_curves(std::filesystem::path(c.out) / "metrics.jsonl",
                           std::filesystem::path(c.out) / "curves.png", "GPT-2 pretraining");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return trainer::kExitFailure;
  }
}

}  // namespace gpt2
