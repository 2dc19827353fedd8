// GPT-2 pretraining (examples/gpt2): next-token prediction on English prose. train.cpp (host
// compiler) and train.cu (nvcc: the same program, able to run on the GPU) are this file and a
// main(). The loop comes first; what it calls is beside it: options.hpp and validate_options.hpp
// (the command line), corpus.hpp (llm.c's token files), training.hpp (AdamW's groups, the
// schedule, one step, the validation loss, samples), gpt2.hpp (the model), and
// common/training_run.hpp (what watches the loop). docs/gpt2.md says the rest.
//
//   gpt2_train --text kjv.txt                       # tiny GPT-2 on the King James Bible
//   gpt2_train --config 124M --batch-size 4 --seq-len 64 --steps 20
//   gpt2_train --resume auto --eval-only            # the last checkpoint's validation loss
#pragma once

#include "common/format.hpp"
#include "common/training_run.hpp"
#include "corpus.hpp"
#include "training.hpp"
#include "validate_options.hpp"

namespace gpt2 {

using namespace ember;
using trainer::printf0;

struct TrainResult : trainer::RunSummary {
  double val_loss = NAN;
};

/// The run: --resume's checkpoint, then the steps with their evaluations and checkpoints, then
/// the samples. `opt` is AdamW, or its ZeRO-1 sharding.
template <class T, class Optimizer>
TrainResult train(GPT2LMHeadModel<T>& model, Optimizer& opt, const TrainConfig& c,
                  const Corpus& corpus, Device device) {
  trainer::Run run({.out = c.out,
                    .benchmark = "gpt2",
                    .program = "gpt2_train",
                    .device = device,
                    .steps = c.steps,
                    .log_every = c.log_every});
  const optim::Schedule schedule = make_schedule(c);
  const int ranks = dist::world_size();
  data::TokenBatches batches(corpus.train, c.batch / ranks, c.seq_len, dist::rank(), ranks);
  std::int64_t step = resume(c, run.files(), model, opt, batches);
  TrainResult result;
  if (c.eval_only) {
    result.steps = step;
    result.val_loss = evaluate(model, corpus, c, device);
    return result;
  }

  dist::DistributedDataParallel ddp(model);  // every rank starts from rank 0's weights
  run.start({device, c.batch * c.accumulation, "adamw", c.lr, c.seed,
             static_cast<std::int64_t>(corpus.train.size()),
             static_cast<std::int64_t>(corpus.val.size())},
            step);
  while (step < c.steps) {
    const double lr = schedule(step);
    const Var<T> loss = train_step(model, opt, ddp, batches, c, device, step, lr);
    run.after_step(++step, c.batch * c.seq_len * c.accumulation, lr, loss);
    const bool last = step == c.steps || (c.stop_after > 0 && step >= c.stop_after);
    if (step % c.eval_every == 0 || last) {
      const double val = run.evaluate({{"step", step}}, [&] {
        return evaluate(model, corpus, c, device);  // the mean loss (MLPerf: log perplexity)
      });
      run.report(step, val, {{"val_loss", val}, {"val_perplexity", std::exp(val)}});
      printf0("\nstep %lld: validation loss %.4f, perplexity %.2f (unigram entropy %.4f)\n",
              static_cast<long long>(step), val, std::exp(val), corpus.unigram_entropy);
      run.save(model, opt, checkpoint_progress(step, batches));
      result.val_loss = val;
    }
    if (last) break;
  }
  static_cast<trainer::RunSummary&>(result) = run.finish(step);

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
  return trainer::main<TrainConfig>(
      argc, argv, "gpt2_train", [](const TrainConfig& c, Device device, const dist::World& world) {
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
        const TrainResult r = trainer::with_precision(
            c.precision, [&]<class T>(T) { return train<T>(c, corpus, device); });
        if (c.eval_only) {
          printf0(
              "\n== evaluation ==\nvalidation loss: %.4f, perplexity %.2f (unigram entropy %.4f)\n",
              r.val_loss, std::exp(r.val_loss), corpus.unigram_entropy);
          return 0;
        }
        trainer::report_throughput(r, "tokens");
        printf0("validation loss: %.4f, perplexity %.2f (unigram entropy %.4f nats)\n", r.val_loss,
                std::exp(r.val_loss), corpus.unigram_entropy);
        trainer::report_time(r);
        trainer::plot_curves(c.out, "GPT-2 pretraining");
        return 0;
      });
}

}  // namespace gpt2
