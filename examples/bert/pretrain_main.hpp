// BERT pretraining (examples/bert): masked LM + next-sentence prediction, MLPerf's language
// workload. pretrain.cpp (host compiler) and pretrain.cu (nvcc: the same program, able to run on
// the GPU) are this file and a main(). The loop comes first; what it calls is beside it:
// options.hpp and validate_options.hpp (the command line), corpus.hpp (instances from the corpus,
// cached), training.hpp (LAMB or AdamW, one step, the evaluation), bert.hpp (the model), and
// common/training_run.hpp (what watches the loop). docs/bert.md says the rest.
//
//   bert_pretrain                                   # tiny BERT on Debian's GCIDE dictionary
//   bert_pretrain --config base --batch-size 64 --accumulation 4 --precision bf16
//   bert_pretrain --resume auto --eval-only         # evaluate the last checkpoint
#pragma once

#include <cstdint>
#include <optional>

#include "common/format.hpp"
#include "common/training_run.hpp"
#include "corpus.hpp"
#include "training.hpp"
#include "validate_options.hpp"

namespace bert {

using namespace ember;
using trainer::printf0;

struct PretrainResult : trainer::RunSummary {
  PretrainEval last;
  double unigram_baseline = 0;
};

template <class T, class Opt>
PretrainResult pretrain(const PretrainConfig& c, const PretrainData& data,
                        const data::WordPieceTokenizer& tokenizer, Device device,
                        bool quiet = false) {
  trainer::Run run({.out = c.out,
                    .benchmark = io::mllog::kBert,
                    .program = "bert_pretrain",
                    .device = device,
                    .steps = c.steps,
                    .log_every = c.log_every,
                    .target = c.target_mlm_accuracy,
                    .quiet = quiet});
  std::optional<ember::detect_anomaly> anomaly;  // this thread, while the run lasts
  if (c.detect_anomaly) anomaly.emplace();

  // The model, in the compute type T, on the device; its optimizer, schedule and data order.
  nn::manual_seed(c.seed);
  BertForPreTraining<T> model(model_config(c, tokenizer), device);
  if (!c.init_checkpoint.empty()) load_hugging_face(model, c.init_checkpoint);
  Opt opt = make_optimizer<Opt>(model, c);
  const optim::Schedule schedule = make_schedule(c);
  data::Batches order = batch_order(c, data);
  std::int64_t step = resume(c, run.files(), model, opt, order);
  PretrainResult result;
  result.unigram_baseline = data.unigram_baseline;
  if (c.eval_only) {  // the weights of --init-checkpoint or --resume, evaluated
    result.steps = step;
    result.last = evaluate(model, data.eval, c, device);
    return result;
  }

  dist::DistributedDataParallel ddp(model);  // every rank starts from rank 0's weights
  run.start({device, c.batch * c.accumulation, std::is_same_v<Opt, optim::LAMB> ? "lamb" : "adamw",
             c.lr, c.seed, static_cast<std::int64_t>(data.train.size()),
             static_cast<std::int64_t>(data.eval.size())},
            step);
  while (step < c.steps) {
    const double lr = schedule(step);
    const PreTrainingOutput<T> out = train_step(model, opt, ddp, order, data, c, device, step, lr);
    run.after_step(++step, c.batch * c.accumulation, lr, out.loss, [&] {
      return io::LogFields{{"mlm_loss", trainer::mean_over_ranks(out.mlm_loss.item())},
                           {"nsp_loss", trainer::mean_over_ranks(out.nsp_loss.item())}};
    });
    const bool last = step == c.steps || (c.stop_after > 0 && step >= c.stop_after);
    if (step % c.eval_every == 0 || last) {
      const PretrainEval e =
          run.evaluate({{"step", step}}, [&] { return evaluate(model, data.eval, c, device); });
      run.report(step, e.mlm_accuracy,
                 {{"eval_mlm_accuracy", e.mlm_accuracy},
                  {"eval_nsp_accuracy", e.nsp_accuracy},
                  {"eval_mlm_loss", e.mlm_loss},
                  {"eval_nsp_loss", e.nsp_loss}});
      print_eval(step, e, data.unigram_baseline, run.elapsed(), quiet);
      run.save(model, opt, checkpoint_progress(step, order));
      result.last = e;
    }
    if (last) break;
  }
  static_cast<trainer::RunSummary&>(result) = run.finish(step);
  return result;
}

/// The run in the compute type --precision names, with the optimizer --optimizer names.
inline PretrainResult run_pretraining(const PretrainConfig& c, const PretrainData& data,
                                      const data::WordPieceTokenizer& tokenizer, Device device,
                                      bool quiet = false) {
  return trainer::with_precision(c.precision, [&]<class T>(T) {
    return c.optimizer == "adamw" ? pretrain<T, optim::AdamW>(c, data, tokenizer, device, quiet)
                                  : pretrain<T, optim::LAMB>(c, data, tokenizer, device, quiet);
  });
}

// ---- The program --------------------------------------------------------------------------------

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
  return trainer::main<PretrainConfig>(
      argc, argv, "bert_pretrain",
      [](const PretrainConfig& c, Device device, const dist::World& world) {
        if (c.summary) {
          if (world.is_main()) print_summary(config_by_name(c.config));
          return 0;
        }
        const data::WordPieceTokenizer tokenizer(c.vocab);
        printf0("ember BERT pretraining: %s, %s, batch %lld x %lld, seq %lld, %s, %s on %s\n",
                c.config.c_str(), c.corpus.c_str(), static_cast<long long>(c.batch),
                static_cast<long long>(c.accumulation), static_cast<long long>(c.seq_len),
                c.optimizer.c_str(), c.precision.c_str(), device.str().c_str());
        // Rank 0 reads the corpus and caches its instances first; the others then load the cache.
        if (!world.is_main()) dist::barrier();
        const PretrainData data = open_pretrain_data(c, tokenizer);
        if (world.is_main()) dist::barrier();
        printf0("data: %zu training and %zu evaluation sequences; unigram baseline %.2f%%\n",
                data.train.size(), data.eval.size(), 100 * data.unigram_baseline);
        const PretrainResult r = run_pretraining(c, data, tokenizer, device);
        if (!c.eval_only) trainer::report_throughput(r, "sequences");
        printf0("%smasked-LM accuracy: %.2f%% (unigram baseline %.2f%%)\n",
                c.eval_only ? "\n== evaluation ==\n" : "", 100 * r.last.mlm_accuracy,
                100 * r.unigram_baseline);
        printf0("next-sentence accuracy: %.2f%%\n", 100 * r.last.nsp_accuracy);
        if (c.eval_only) {
          printf0("eval loss: %.4f (masked LM) + %.4f (next sentence)\n", r.last.mlm_loss,
                  r.last.nsp_loss);
          return 0;
        }
        trainer::report_time(r, c.target_mlm_accuracy, "masked-LM accuracy");
        trainer::plot_curves(c.out, "BERT pretraining");
        return c.target_mlm_accuracy > 0 && r.seconds_to_target < 0 ? 3 : 0;
      });
}

}  // namespace bert
