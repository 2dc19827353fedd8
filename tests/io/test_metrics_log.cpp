// Metrics logs: JSON Lines records parse back in order and are on disk as soon as they are
// logged; MLLOG lines have exactly mlperf_logging's prefix, fields, order and separators.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <ember/io/metrics_log.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/files.hpp"

using namespace ember;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ojson = nlohmann::ordered_json;

using ember::testing::read_bytes;
using ember::testing::TempDir;
using ember::testing::write_bytes;

namespace {
namespace test_io_metrics_log {

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> keys_of(const ojson& j) {
  std::vector<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.push_back(it.key());
  return out;
}

TEST_CASE("JsonlWriter appends one JSON object per line, on disk at once", "[io]") {
  const TempDir tmp;
  const fs::path file = tmp / "metrics.jsonl";
  double now = 100.0;
  {
    io::JsonlWriter log(file, [&now] { return now; });
    now = 102.5;
    log.log(10, {{"epoch", 1}, {"loss", 0.5}});
    // Flushed per line: the record is in the file while the writer is still open.
    REQUIRE(read_lines(file) ==
            std::vector<std::string>{R"({"step":10,"epoch":1,"loss":0.5,"time_s":2.5})"});
    now = 103.0;
    log.log(20, {{"loss", 0.25}, {"eval_accuracy", 0.875}, {"phase", "train"}});
    log.log(30);
    log.write({{"note", "free-form"}, {"values", {1, 2, 3}}});
    now = 103.0004;
    log.log(40, {{"loss", std::numeric_limits<double>::quiet_NaN()}});
    log.log(50, {{"time_s", 7}, {"step", 51}});  // the caller's own step and time win
  }
  {
    io::JsonlWriter again(file);  // a second writer appends
    again.log(60, {{"loss", 0.125}});
  }
  const auto lines = read_lines(file);
  REQUIRE(lines.size() == 7);
  std::vector<ojson> records;
  for (const auto& line : lines) records.push_back(ojson::parse(line));
  CHECK(keys_of(records[0]) == std::vector<std::string>{"step", "epoch", "loss", "time_s"});
  CHECK(records[1]["step"] == 20);
  CHECK(records[1]["eval_accuracy"] == 0.875);
  CHECK(records[1]["phase"] == "train");
  CHECK(records[1]["time_s"] == 3.0);
  CHECK(keys_of(records[2]) == std::vector<std::string>{"step", "time_s"});
  CHECK(records[3] == ojson({{"note", "free-form"}, {"values", {1, 2, 3}}}));
  CHECK(records[4]["loss"].is_null());  // JSON has no NaN
  CHECK(records[4]["time_s"] == 3.0);   // to the millisecond
  CHECK(records[5]["step"] == 51);
  CHECK(records[5]["time_s"] == 7);
  CHECK(records[6]["loss"] == 0.125);
  CHECK(records[6]["time_s"].get<double>() >= 0.0);
}

TEST_CASE("LogValue: JSON's scalars, lists, and a key given twice", "[io]") {
  const TempDir tmp;
  const double inf = std::numeric_limits<double>::infinity();
  constexpr std::uint64_t kBig = std::numeric_limits<std::uint64_t>::max();  // above int64's
  {
    io::JsonlWriter log(tmp / "m.jsonl");
    log.write({{"none", nullptr},
               {"yes", true},
               {"int", -3},
               {"big", kBig},
               {"float", 0.25f},
               {"inf", -inf},
               {"view", std::string_view("sv")},
               {"nested", {1, {2.5, "x"}, nullptr}},
               {"yes", false}});  // keeps its first place, takes the last value
  }
  const auto lines = read_lines(tmp / "m.jsonl");
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Contains("\"big\":18446744073709551615"));
  const ojson j = ojson::parse(lines[0]);
  CHECK(keys_of(j) ==
        std::vector<std::string>{"none", "yes", "int", "big", "float", "inf", "view", "nested"});
  CHECK(j["none"].is_null());
  CHECK(j["yes"] == false);
  CHECK(j["int"] == -3);
  CHECK(j["big"].get<std::uint64_t>() == kBig);
  CHECK(j["float"] == 0.25);
  CHECK(j["inf"].is_null());  // JSON has no infinities
  CHECK(j["view"] == "sv");
  CHECK(j["nested"] == ojson::parse(R"([1, [2.5, "x"], null])"));

  // A braced value is a list; parentheses give the number.
  CHECK(std::holds_alternative<io::LogValue::List>(io::LogValue{1}.get()));
  CHECK(std::holds_alternative<std::int64_t>(io::LogValue(1).get()));
  CHECK(std::holds_alternative<std::uint64_t>(io::LogValue(7u).get()));
  CHECK(std::holds_alternative<std::string>(io::LogValue("text").get()));
  CHECK(std::holds_alternative<std::nullptr_t>(io::LogValue().get()));
}

TEST_CASE("JsonlWriter refuses what it cannot write", "[io]") {
  const TempDir tmp;
  CHECK_THROWS_WITH(
      io::JsonlWriter(tmp / "no/such/dir/m.jsonl"),
      Contains("cannot open") && Contains("m.jsonl") && Contains("No such file or directory"));
  io::JsonlWriter log(tmp / "m.jsonl");
  CHECK_THROWS_WITH(log.log(1, {{"bad", std::string("\xff\xfe")}}),
                    Contains("cannot write a record") && Contains("UTF-8"));
  CHECK(fs::file_size(tmp / "m.jsonl") == 0);
  io::JsonlWriter moved = std::move(log);
  moved.log(1);
  CHECK(read_lines(tmp / "m.jsonl").size() == 1);
}

TEST_CASE("MlLogger writes mlperf_logging's MLLOG lines", "[io]") {
  std::ostringstream os;
  io::MlLoggerOptions opt;
  opt.clock_ms = [] { return std::int64_t{1690000000000}; };
  opt.root_dir = fs::path(__FILE__).parent_path().string();  // "file" becomes the bare name
  io::MlLogger ml(os, opt);

  // clang-format off
  ml.event(io::mllog::kEvalAccuracy, 0.91, {{io::mllog::kEpochNum, 3}}); const int line = __LINE__;
  // clang-format on
  const std::string want =
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1690000000000, "
      "\"event_type\": \"POINT_IN_TIME\", \"key\": \"eval_accuracy\", "
      "\"value\": 0.91, \"metadata\": {\"file\": \"test_metrics_log.cpp\", "
      "\"lineno\": " +
      std::to_string(line) + ", \"epoch_num\": 3}}\n";
  CHECK(os.str() == want);

  // The part after the prefix is JSON with exactly these fields, in this order.
  const std::string text = os.str();
  REQUIRE(text.rfind(":::MLLOG ", 0) == 0);
  const ojson j = ojson::parse(text.substr(9));
  CHECK(keys_of(j) ==
        std::vector<std::string>{"namespace", "time_ms", "event_type", "key", "value", "metadata"});
  CHECK(keys_of(j["metadata"]) == std::vector<std::string>{"file", "lineno", "epoch_num"});
  CHECK(j["namespace"] == "");
  CHECK(j["time_ms"] == 1690000000000);
  CHECK(j["event_type"] == "POINT_IN_TIME");
  CHECK(j["key"] == "eval_accuracy");
  CHECK(j["value"] == 0.91);
  CHECK(j["metadata"]["lineno"] == line);
}

TEST_CASE("MlLogger: intervals, defaults, the common keys and Python's escaping", "[io]") {
  std::ostringstream os;
  std::int64_t t = 1000;
  io::MlLoggerOptions opt;
  opt.clock_ms = [&t] { return t++; };
  opt.name_space = "worker0";
  io::MlLogger ml(os, opt);
  namespace k = io::mllog;
  ml.event(k::kSubmissionBenchmark, k::kResnet);
  ml.event(k::kGlobalBatchSize, 256);
  ml.event(k::kSeed, std::uint64_t{18446744073709551615u});
  ml.event(k::kOptBaseLearningRate, 1e-05);
  ml.event(k::kTrainSamples, 60000);
  ml.event(k::kEvalSamples, 10000);
  ml.start(k::kInitStart);
  ml.end(k::kInitStop);
  ml.start(k::kRunStart);
  ml.start(k::kEpochStart, nullptr, {{k::kEpochNum, 1}});
  ml.start(k::kBlockStart, nullptr, {{k::kFirstEpochNum, 1}, {k::kEpochCount, 1}});
  ml.end(k::kBlockStop, nullptr, {{k::kFirstEpochNum, 1}});
  ml.end(k::kEpochStop, nullptr, {{k::kEpochNum, 1}});
  ml.start(k::kEvalStart, nullptr, {{k::kEpochNum, 1}});
  ml.end(k::kEvalStop, nullptr, {{k::kEpochNum, 1}});
  ml.event("note", "caf\xc3\xa9", {{"lineno", 7}});  // a caller's lineno replaces the call site's
  ml.end(k::kRunStop, nullptr, {{k::kStatus, k::kSuccess}});

  std::vector<ojson> events;
  std::istringstream in(os.str());
  for (std::string line; std::getline(in, line);) {
    REQUIRE(line.rfind(":::MLLOG {", 0) == 0);
    // Python's json.dumps separators: ", " and ": ", never a bare ',' or ':' between tokens.
    CHECK_THAT(line, Contains("\"namespace\": \"worker0\", \"time_ms\": "));
    events.push_back(ojson::parse(line.substr(9)));
  }
  REQUIRE(events.size() == 17);
  CHECK(events[0]["key"] == "submission_benchmark");
  CHECK(events[0]["value"] == "resnet");
  CHECK(events[1]["value"] == 256);
  CHECK_THAT(os.str(), Contains("\"key\": \"seed\", \"value\": 18446744073709551615,"));
  CHECK(events[3]["value"] == 1e-05);
  CHECK_THAT(os.str(), Contains("\"key\": \"opt_base_learning_rate\", \"value\": 1e-05,"));
  CHECK(events[6]["event_type"] == "INTERVAL_START");
  CHECK(events[6]["key"] == "init_start");
  CHECK(events[6]["value"].is_null());
  CHECK(events[7]["event_type"] == "INTERVAL_END");
  CHECK(events[7]["key"] == "init_stop");
  CHECK(events[10]["metadata"]["first_epoch_num"] == 1);
  CHECK(events[10]["metadata"]["epoch_count"] == 1);
  CHECK(events[15]["value"] == "caf\xc3\xa9");
  CHECK_THAT(os.str(), Contains("\"value\": \"caf\\u00e9\""));  // ensure_ascii, as Python
  CHECK(keys_of(events[15]["metadata"]) == std::vector<std::string>{"file", "lineno"});
  CHECK(events[15]["metadata"]["lineno"] == 7);
  CHECK(events[16]["event_type"] == "INTERVAL_END");
  CHECK(events[16]["key"] == "run_stop");
  CHECK(events[16]["metadata"]["status"] == "success");
  CHECK_THAT(events[16]["metadata"]["file"].get<std::string>(), Contains("test_metrics_log.cpp"));
  for (std::size_t i = 0; i < events.size(); ++i) {
    CHECK(events[i]["time_ms"] == 1000 + static_cast<std::int64_t>(i));
  }
}

}  // namespace test_io_metrics_log
}  // namespace
