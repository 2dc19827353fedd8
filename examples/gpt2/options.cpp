// The GPT-2 trainer's command line (options.hpp), in a translation unit of its own.
#include "gpt2/options.hpp"

#include "common/command_line.hpp"

namespace gpt2 {

std::optional<int> parse_options(TrainConfig& c, int argc, char** argv) {
  CLI::App app{"ember's GPT-2 pretraining (next-token prediction on English prose)", "gpt2_train"};
  app.add_option("--config", c.config, "tiny | mini | 124M | 350M")->capture_default_str();
  app.add_option("--text", c.text, "a UTF-8 text file, tokenized once into OUT/data")
      ->check(CLI::ExistingFile);
  app.add_option("--data", c.data,
                 "a folder of llm.c token files, train.bin and val.bin (written from --text when "
                 "given; default OUT/data)");
  app.add_option("--vocab", c.vocab, "GPT-2's gpt2.tiktoken (default: openai-whisper's copy)")
      ->check(CLI::ExistingFile);
  app.add_option("--val-fraction", c.val_fraction, "of --text's tokens, held out (the last ones)")
      ->capture_default_str();
  app.add_option("--batch-size", c.batch, "sequences per micro-batch")->capture_default_str();
  app.add_option("--seq-len", c.seq_len, "tokens per sequence")->capture_default_str();
  app.add_option("--accumulation", c.accumulation, "micro-batches per optimizer step")
      ->capture_default_str();
  app.add_option("--steps", c.steps, "optimizer steps")->capture_default_str();
  app.add_option("--warmup", c.warmup, "warmup, as a fraction of the steps")->capture_default_str();
  app.add_option("--lr", c.lr, "peak learning rate (AdamW)")->capture_default_str();
  app.add_option("--min-lr", c.min_lr, "the cosine's floor, as a fraction of --lr")
      ->capture_default_str();
  app.add_option("--weight-decay", c.weight_decay, "on matrices only")->capture_default_str();
  app.add_option("--max-grad-norm", c.max_grad_norm, "clip the gradient's norm (0: no clipping)")
      ->capture_default_str();
  app.add_option("--dropout", c.dropout,
                 "on embeddings, attention and residuals (GPT-2 had 0.1; 0: none, as llm.c)")
      ->capture_default_str();
  app.add_flag("--zero", c.zero,
               "ZeRO-1 under mpirun: each rank keeps AdamW's state for its share of the parameters");
  app.add_option("--precision", c.precision, "float | bf16 | auto (bf16 on a GPU)")
      ->capture_default_str();
  app.add_option("--device", c.device, "cpu | cuda | auto")->capture_default_str();
  app.add_option("--eval-every", c.eval_every, "steps between evaluations and checkpoints")
      ->capture_default_str();
  app.add_option("--eval-batches", c.eval_batches, "validation batches per evaluation")
      ->capture_default_str();
  app.add_option("--sample-tokens", c.sample_tokens, "tokens sampled after training (0: none)")
      ->capture_default_str();
  app.add_option("--out", c.out, "directory for metrics, logs and checkpoints")
      ->capture_default_str();
  app.add_option("--resume", c.resume, "checkpoint to resume from ('auto': OUT/ckpt-last)")
      ->check(trainer::checkpoint_or_auto());
  app.add_option("--stop-after", c.stop_after,
                 "end after this step, as if interrupted (resume with --resume auto)");
  app.add_flag("--eval-only", c.eval_only,
               "evaluate the weights of --resume, print the validation loss, exit");
  app.add_flag("--summary", c.summary, "print the modules and parameter counts, then exit");
  app.add_option("--seed", c.seed)->capture_default_str();
  app.add_option("--log-every", c.log_every, "steps between loss readings")->capture_default_str();
  return trainer::parse_command_line(app, argc, argv);
}

}  // namespace gpt2
