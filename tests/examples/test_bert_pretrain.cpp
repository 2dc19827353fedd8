// The BERT pretraining trainer (examples/bert/pretrain_main.hpp): a run interrupted and resumed
// from its checkpoint ends with the same weights and optimizer state, bit for bit, as the
// uninterrupted run (with dropout, accumulation and shuffling); and a short pretraining run of a
// tiny BERT on Debian's GCIDE dictionary (dict-gcide) lifts the masked-LM accuracy clearly above
// the unigram baseline.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <type_traits>

#include "bert/pretrain_main.hpp"
#include "support/checkpoints.hpp"
#include "support/files.hpp"
#include "support/step_footprint.hpp"

namespace fs = std::filesystem;
using namespace ember;
using ember::testing::TempDir;

namespace {
namespace test_examples_bert_pretrain {

bert::PretrainConfig synthetic_config(const fs::path& out) {
  bert::PretrainConfig c;
  c.corpus = "synthetic";
  c.max_documents = 256;
  c.config = "tiny";
  c.seq_len = 32;
  c.max_predictions = 5;
  c.eval_sequences = 16;
  c.batch = 4;
  c.accumulation = 2;
  c.steps = 6;
  c.eval_every = 3;
  c.log_every = 3;
  c.device = "cpu";
  c.out = out.string();
  bert::settle_defaults(c, Device::cpu());
  return c;
}

TEST_CASE("bert_pretrain resumes an interrupted run exactly", "[examples][bert]") {
  const TempDir tmp("ember_bert_pretrain");
  const fs::path& dir = tmp.path;
  const data::WordPieceTokenizer tok(bert::default_vocab());
  const bert::PretrainConfig straight = synthetic_config(dir / "straight");
  const bert::PretrainData data = bert::open_pretrain_data(straight, tok);
  const bert::PretrainResult r = bert::run_pretraining(straight, data, tok, Device::cpu(), true);
  REQUIRE(r.steps == 6);

  bert::PretrainConfig first = synthetic_config(dir / "resumed");
  first.stop_after = 3;
  REQUIRE(bert::run_pretraining(first, data, tok, Device::cpu(), true).steps == 3);
  bert::PretrainConfig rest = synthetic_config(dir / "resumed");
  rest.resume = "auto";
  REQUIRE(bert::run_pretraining(rest, data, tok, Device::cpu(), true).steps == 6);

  const NamedTensors a = io::load_safetensors(dir / "straight" / "ckpt-last.safetensors");
  const NamedTensors b = io::load_safetensors(dir / "resumed" / "ckpt-last.safetensors");
  REQUIRE(a.size() > 100);  // weights, LAMB's two moments, steps
  ember::testing::require_identical(a, b);

  // --eval-only on the last checkpoint: the run's last evaluation again, and nothing trained.
  bert::PretrainConfig eval = synthetic_config(dir / "straight");
  eval.resume = "auto";
  eval.eval_only = true;
  REQUIRE_NOTHROW(bert::validate_options(eval));
  const bert::PretrainResult e = bert::run_pretraining(eval, data, tok, Device::cpu(), true);
  REQUIRE(e.steps == 6);
  REQUIRE(e.last.mlm_accuracy == r.last.mlm_accuracy);
  REQUIRE(e.last.mlm_loss == r.last.mlm_loss);
  REQUIRE(e.last.nsp_loss == r.last.nsp_loss);
  ember::testing::require_identical(
      a, io::load_safetensors(dir / "straight" / "ckpt-last.safetensors"));
}

TEST_CASE("bert_pretrain's step takes no memory and makes no primitive once warm",
          "[examples][bert]") {
  const TempDir tmp("ember_bert_steady");
  const data::WordPieceTokenizer tok(bert::default_vocab());
  bert::PretrainConfig c = synthetic_config(tmp.path);
  c.seq_len = 128;  // BERT-tiny's pretraining shape: attention scores of 1 MiB per layer
  c.max_predictions = 20;
  c.batch = 8;
  c.accumulation = 1;
  c.max_documents = 64;
  const bert::PretrainData data = bert::open_pretrain_data(c, tok);
  const Device cpu = Device::cpu();
  nn::manual_seed(c.seed);
  bert::BertForPreTraining<float> model(bert::model_config(c, tok), cpu);
  auto opt = bert::make_optimizer<optim::AdamW>(model, c);
  const optim::Schedule schedule = bert::make_schedule(c);
  dist::DistributedDataParallel ddp(model);
  data::Batches order(static_cast<std::int64_t>(data.train.size()), c.batch,
                      {.seed = c.seed, .drop_last = true});
  ember::testing::require_steady_steps([&](std::int64_t step) {
    bert::train_step(model, opt, ddp, order, data, c, cpu, step, schedule(step));
  });
}

TEST_CASE("bert_pretrain learns more than token frequencies from GCIDE", "[examples][bert]") {
  if (!fs::exists("/usr/share/dictd/gcide.dict.dz")) {
    FAIL("Debian's dict-gcide is missing: apt-get install dict-gcide");
  }
  const TempDir tmp("ember_bert_gcide");
  bert::PretrainConfig c;
  c.max_documents = 30000;  // a quarter of the dictionary
  c.seq_len = 64;
  c.max_predictions = 10;
  c.eval_sequences = 512;
  c.batch = 32;
  c.steps = 200;
  c.eval_every = 200;
  c.optimizer = "adamw";
  c.lr = 2e-3;
  c.device = "cpu";
  c.out = (tmp.path / "run").string();
  bert::settle_defaults(c, Device::cpu());
  const data::WordPieceTokenizer tok(c.vocab);
  const bert::PretrainData data = bert::open_pretrain_data(c, tok);
  REQUIRE(data.train.size() > 20000);
  // The most frequent masked token ("the") is about 6% of the masked tokens.
  CHECK(data.unigram_baseline > 0.03);
  CHECK(data.unigram_baseline < 0.12);
  const bert::PretrainResult r = bert::run_pretraining(c, data, tok, Device::cpu(), true);
  INFO("masked-LM accuracy " << r.last.mlm_accuracy << ", unigram baseline " << r.unigram_baseline);
  // 5,120 masked tokens are scored: the standard error of an accuracy near 0.08 is 0.004, so
  // 1.3 times the baseline (+0.019) is more than four of them above it.
  CHECK(r.last.mlm_accuracy > 1.3 * r.unigram_baseline);
}

TEST_CASE("bert_pretrain checks its options before reading the corpus", "[examples][bert]") {
  const auto fails = [](auto change, const char* words) {
    bert::PretrainConfig c;
    change(c);
    bert::settle_defaults(c, Device::cpu());
    INFO(words);
    REQUIRE_THROWS_WITH(bert::validate_options(c), Catch::Contains(words));
  };
  bert::PretrainConfig good;
  bert::settle_defaults(good, Device::cpu());
  REQUIRE_NOTHROW(bert::validate_options(good));
  fails([](bert::PretrainConfig& c) { c.config = "huge"; }, "unknown configuration 'huge'");
  fails([](bert::PretrainConfig& c) { c.optimizer = "sgd"; }, "--optimizer must be lamb or adamw");
  fails([](bert::PretrainConfig& c) { c.precision = "fp8"; }, "--precision must be");
  fails([](bert::PretrainConfig& c) { c.vocab = "/no/such/vocab.txt"; }, "--vocab: no file");
  fails([](bert::PretrainConfig& c) { c.max_predictions = 200; }, "--max-predictions");
  fails([](bert::PretrainConfig& c) { c.batch = 0; }, "--batch-size must be positive");
  fails([](bert::PretrainConfig& c) { c.warmup = 2; }, "--warmup is a fraction");
  fails([](bert::PretrainConfig& c) { c.target_mlm_accuracy = 72; }, "--target-mlm-accuracy");
  fails([](bert::PretrainConfig& c) { c.init_checkpoint = "/no/such.safetensors"; },
        "--init-checkpoint: no file");
  fails([](bert::PretrainConfig& c) { c.eval_only = true; }, "--eval-only needs the weights");
}

}  // namespace test_examples_bert_pretrain
}  // namespace
