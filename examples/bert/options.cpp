// BERT pretraining's command line (options.hpp), in a translation unit of its own.
#include "bert/options.hpp"

#include "common/command_line.hpp"

namespace bert {

std::optional<int> parse_options(PretrainConfig& c, int argc, char** argv) {
  CLI::App app{"ember's BERT pretraining (MLPerf's language workload: masked LM + next sentence)",
               "bert_pretrain"};
  app.add_option("--config", c.config, "tiny | mini | small | base | large")->capture_default_str();
  app.add_option("--corpus", c.corpus,
                 "gcide (Debian's dict-gcide) or comma-separated text files (a sentence per "
                 "line, documents separated by blank lines)")
      ->capture_default_str()
      ->check(trainer::name_or_files({"gcide", "synthetic"}));
  app.add_option("--max-documents", c.max_documents, "read at most this many documents (0: all)");
  app.add_option("--vocab", c.vocab, "WordPiece vocab.txt (default: BERT's uncased vocabulary)")
      ->check(CLI::ExistingFile);
  app.add_option("--seq-len", c.seq_len)->capture_default_str();
  app.add_option("--max-predictions", c.max_predictions, "masked tokens per sequence at most")
      ->capture_default_str();
  app.add_option("--dupe-factor", c.dupe_factor, "maskings of each document")
      ->capture_default_str();
  app.add_option("--eval-sequences", c.eval_sequences, "sequences held out for evaluation")
      ->capture_default_str();
  app.add_option("--batch-size", c.batch, "sequences per micro-batch")->capture_default_str();
  app.add_option("--accumulation", c.accumulation, "micro-batches per optimizer step")
      ->capture_default_str();
  app.add_option("--steps", c.steps, "optimizer steps")->capture_default_str();
  app.add_option("--warmup", c.warmup, "warmup, as a fraction of the steps")->capture_default_str();
  app.add_option("--optimizer", c.optimizer, "lamb | adamw")->capture_default_str();
  app.add_option("--lr", c.lr, "peak learning rate (default: 5e-3 LAMB, 1e-3 AdamW)");
  app.add_option("--weight-decay", c.weight_decay)->capture_default_str();
  app.add_option("--max-grad-norm", c.max_grad_norm, "clip the gradient's norm (0: no clipping)")
      ->capture_default_str();
  app.add_option("--precision", c.precision, "float | bf16 | auto (bf16 on a GPU)")
      ->capture_default_str();
  app.add_option("--device", c.device, "cpu | cuda | auto")->capture_default_str();
  app.add_option("--eval-every", c.eval_every, "steps between evaluations and checkpoints")
      ->capture_default_str();
  app.add_option("--target-mlm-accuracy", c.target_mlm_accuracy,
                 "masked-LM accuracy to reach (MLPerf: 0.720 on Wikipedia with BERT-large)");
  app.add_option("--init-checkpoint", c.init_checkpoint,
                 "Hugging Face safetensors (BertForPreTraining or BertModel) to start from")
      ->check(CLI::ExistingFile);
  app.add_option("--out", c.out, "directory for metrics, logs and checkpoints")
      ->capture_default_str();
  app.add_option("--cache-dir", c.cache_dir,
                 "where the tokenized instances are cached (OUT/cache)");
  app.add_option("--resume", c.resume, "checkpoint to resume from ('auto': OUT/ckpt-last)")
      ->check(trainer::checkpoint_or_auto());
  app.add_option("--stop-after", c.stop_after,
                 "end after this step, as if interrupted (resume with --resume auto)");
  app.add_flag("--eval-only", c.eval_only,
               "evaluate the weights of --init-checkpoint or --resume, print the metrics, exit");
  app.add_flag("--detect-anomaly", c.detect_anomaly,
               "stop at the first operation whose output is NaN or infinite, naming it (slow: "
               "every output is read)");
  app.add_flag("--summary", c.summary, "print the modules and parameter counts, then exit");
  app.add_option("--seed", c.seed)->capture_default_str();
  app.add_option("--log-every", c.log_every, "steps between loss readings")->capture_default_str();
  return trainer::parse_command_line(app, argc, argv);
}

}  // namespace bert
