#include "scenario/scenario_file.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace podsim::scenario {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing::StartsWith;

// The message of parsing `text` as "t.textproto"; "" when it loads.
std::string ErrorOf(const std::string& text) {
  sim::StatusOr<Scenario> scenario = ParseScenarioText(text, "t.textproto");
  return scenario.ok() ? "" : scenario.status().message();
}

constexpr const char* kCollective = R"(system { preset: "tpu-v5e:16x16" }
collective {
  op: ALL_REDUCE
  bytes: 1e9
}
)";

TEST(ScenarioFileTest, ParsesACollective) {
  sim::StatusOr<Scenario> scenario = ParseScenarioText(kCollective, "t.textproto");
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->system().preset(), "tpu-v5e:16x16");
  ASSERT_TRUE(scenario->has_collective());
  EXPECT_EQ(scenario->collective().op(), Collective::ALL_REDUCE);
  EXPECT_EQ(scenario->collective().bytes(), 1e9);
  EXPECT_FALSE(scenario->outputs().json());
}

TEST(ScenarioFileTest, DumpRoundTrips) {
  Scenario s;
  s.set_description("a \"quoted\" description\nover two lines");
  System* system = s.mutable_system();
  Chip* chip = system->mutable_custom()->mutable_chip();
  chip->set_base("h100");
  chip->set_hop_latency_s(1.234567890123e-7);
  chip->set_hbm_bytes(0.1 + 0.2);  // Not exactly representable in short decimal.
  chip->add_host_shape(2);
  chip->add_host_shape(4);
  Fabric* fabric = system->mutable_custom()->mutable_fabric();
  fabric->set_kind(Fabric::TORUS);
  fabric->add_shape(4);
  fabric->add_shape(2);
  fabric->set_wrap("x");
  Collective* c = s.mutable_collective();
  c->set_op(Collective::BROADCAST);
  c->set_bytes(3.0 * (1 << 20));
  c->add_axes("y");
  c->add_axes("x");
  c->set_src("1,1");
  c->set_ideal(false);  // Present though false: presence must survive too.
  s.mutable_outputs()->set_json(true);

  const std::string text = DumpScenario(s);
  sim::StatusOr<Scenario> parsed = ParseScenarioText(text, "dump.textproto");
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  std::string diff;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(s, *parsed)) << diff;
  EXPECT_TRUE(parsed->collective().has_ideal());
  EXPECT_EQ(DumpScenario(*parsed), text);
}

TEST(ScenarioFileTest, DumpIsCanonical) {
  sim::StatusOr<Scenario> scenario = ParseScenarioText(
      "collective { bytes: 1e9 op: ALL_REDUCE axes: 'x' axes: 'y' }\n"
      "system { preset: 'tpu-v5e:16x16' }  outputs{json:true}",
      "t.textproto");
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(DumpScenario(*scenario),
            "# proto-file: scenario/scenario.proto\n"
            "# proto-message: podsim.scenario.Scenario\n"
            "\n"
            "system {\n"
            "  preset: \"tpu-v5e:16x16\"\n"
            "}\n"
            "collective {\n"
            "  op: ALL_REDUCE\n"
            "  bytes: 1000000000\n"
            "  axes: \"x\"\n"
            "  axes: \"y\"\n"
            "}\n"
            "outputs {\n"
            "  json: true\n"
            "}\n");
}

// Syntax and schema errors: the parser's first error at its 1-based line and column.

TEST(ScenarioFileTest, UnknownFieldSuggestsTheNearestName) {
  EXPECT_EQ(
      ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
              "collective {\n"
              "  op: ALL_REDUCE\n"
              "  bites: 1e9\n"
              "}\n"),
      "t.textproto:4:3: unknown field 'bites' in Collective (did you mean 'bytes'?); "
      "fields: op, bytes, axes, algorithm, src, dst, sweep_bytes, ideal, reference, min_bytes, "
      "max_bytes, step_factor");
}

TEST(ScenarioFileTest, CommandLineSpellingsGetTheSchemaName) {
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5p:4x4x4\" }\n"
                    "sweep {\n"
                    "  batch-tokens: 4096\n"
                    "}\n"),
            "t.textproto:3:3: unknown field 'batch-tokens' in Sweep (did you mean "
            "'batch_tokens'?); fields: model, batch_tokens, seq, jobs, top, exhaustive, mpi, "
            "precision, distributed_optimizer, tp_comm_overlap, fp8, kernels, "
            "no_reshard_after_forward, fp8_all_gather, loss, ep_comm_overlap, fp8_dispatch, "
            "grad_reduce_in_bf16, fp8_library, fp8_recipe, framework, overlap_grad_reduce, "
            "overlap_param_gather");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5p:4x4x4\" }\n"
                    "collective { op: all-reduce }\n"),
            "t.textproto:2:18: unknown value 'all-reduce' for field 'op' (did you mean "
            "'ALL_REDUCE'?); values: ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE, ALL_TO_ALL, "
            "BROADCAST, P2P, SHIFT");
}

TEST(ScenarioFileTest, UnknownFieldInTheWrongMessageSaysWhereItBelongs) {
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "topology {}\n"
                    "json: true\n"),
            "t.textproto:3:1: unknown field 'json' in Scenario; 'json' is a field of Outputs; "
            "fields: description, system, topology, collective, train, infer, sweep, outputs");
}

TEST(ScenarioFileTest, UnknownEnumValueSuggestsTheNearestValue) {
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "collective {\n"
                    "  op: ALL_REDUCED\n"
                    "  bytes: 1e9\n"
                    "}\n"),
            "t.textproto:3:7: unknown value 'ALL_REDUCED' for field 'op' (did you mean "
            "'ALL_REDUCE'?); values: ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE, ALL_TO_ALL, "
            "BROADCAST, P2P, SHIFT");
  // The command line's spelling, lower case.
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5p:4x4x4\" }\n"
                    "train { recompute: selective }\n"),
            "t.textproto:2:20: unknown value 'selective' for field 'recompute' (did you mean "
            "'SELECTIVE'?); values: NONE, SELECTIVE, FULL, SAVE_NAMED");
}

TEST(ScenarioFileTest, TypeErrorsKeepTheParsersWords) {
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "collective {\n"
                    "  op: ALL_REDUCE\n"
                    "  bytes: \"1GiB\"\n"
                    "}\n"),
            "t.textproto:4:10: expected double, got: \"1GiB\"");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5p:4x4x4\" }\n"
                    "sweep { seq: 4096.5 }\n"),
            "t.textproto:2:14: expected integer, got: 4096.5");
  EXPECT_EQ(ErrorOf("system { preset: 16 }\n"), "t.textproto:1:18: expected string, got: 16");
}

TEST(ScenarioFileTest, StructureErrors) {
  // An unclosed brace: the next field is read inside it.
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\"\n"
                    "topology {}\n"),
            "t.textproto:2:1: unknown field 'topology' in System; 'topology' is a field of "
            "Scenario; fields: preset, custom");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "topology {\n"),
            "t.textproto:3:1: expected identifier, got: the end of the file");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "topology {}\n"
                    "topology {}\n"),
            "t.textproto:3:1: non-repeated field \"topology\" is specified multiple times.");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "topology {}\n"
                    "\tsweep {}\n"),
            "t.textproto:3:9: field \"sweep\" is specified along with field \"topology\", "
            "another member of oneof \"command\".");
}

// Semantic errors: the field's path and its position (or the enclosing message's).

TEST(ScenarioFileTest, MissingRequiredFieldPointsAtItsMessage) {
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "collective {\n"
                    "  bytes: 1e9\n"
                    "}\n"),
            "t.textproto:2:1: collective.op: missing; expected one of ALL_GATHER, "
            "REDUCE_SCATTER, ALL_REDUCE, ALL_TO_ALL, BROADCAST, P2P, SHIFT");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "collective { op: ALL_GATHER }\n"),
            "t.textproto:2:1: collective.bytes: missing; give the size of the whole array in "
            "bytes (like 1073741824 or 1e9), sweep_bytes: true, or min_bytes and max_bytes");
  EXPECT_EQ(ErrorOf("topology {}\n"),
            "t.textproto: system: missing; give preset: \"tpu-v5p:4x4x4\" (a SYSTEM string) or "
            "custom { chip { ... } fabric { ... } }");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"),
            "t.textproto: no command; give one of topology, collective, train, infer, sweep");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5p:4x4x4\" }\n"
                    "train {\n"
                    "  model { preset: \"llama3-8b\" }\n"
                    "  layout { text: \"fsdp=64\" }\n"
                    "  seq: 4096\n"
                    "}\n"),
            "t.textproto:2:1: train.batch_tokens: missing; give the tokens per step");
}

TEST(ScenarioFileTest, OutOfRangeValueNamesFieldAndValue) {
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "collective {\n"
                    "  op: ALL_REDUCE\n"
                    "  bytes: -3\n"
                    "}\n"),
            "t.textproto:4:3: collective.bytes: must be > 0 and at most 1e15 (got -3)");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5p:4x4x4\" }\n"
                    "sweep {\n"
                    "  model { preset: \"llama3-8b\" }\n"
                    "  batch_tokens: 1048576 seq: 4096\n"
                    "  jobs: 0\n"
                    "}\n"),
            "t.textproto:5:3: sweep.jobs: must be an integer in [1, 256] (got 0)");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5p:4x4x4\" }\n"
                    "sweep {\n"
                    "  model { preset: \"llama3-8b\" }\n"
                    "  batch_tokens: 1000000 seq: 4096\n"
                    "}\n"),
            "t.textproto:4:3: sweep.batch_tokens: must be a multiple of seq=4096 (got 1000000)");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5p:4x4x4\" }\n"
                    "collective { op: ALL_GATHER bytes: 1e6 axes: [\"x\", \"w\"] }\n"),
            "t.textproto:2:40: collective.axes[1]: the system has no axis 'w' (did you mean "
            "'x'?); its axes are x, y, z");
}

TEST(ScenarioFileTest, ErrorsOfNestedParsersGetThePosition) {
  EXPECT_THAT(ErrorOf("system {\n"
                      "  preset: \"tpu-v5q:4x4x4\"\n"
                      "}\n"
                      "topology {}\n"),
              StartsWith("t.textproto:2:3: system.preset: system 'tpu-v5q:4x4x4': unknown system "
                         "'tpu-v5q' (did you mean 'tpu-v5e'?); known: tpu-v4p, "));
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5p:4x4x4\" }\n"
                    "train {\n"
                    "  model { preset: \"llama3-8b\" }\n"
                    "  layout { text: \"fsdp=16,tp=3\" }\n"
                    "  batch_tokens: 262144\n"
                    "  seq: 4096\n"
                    "}\n"),
            "t.textproto:4:3: train.layout: layout dp=1,fsdp=16,tp=3,pp=1: dp*fsdp*tp*pp = 48 "
            "must equal the 64 chips of the system");
  EXPECT_THAT(ErrorOf("system { preset: \"tpu-v5p:4x4x4\" }\n"
                      "train {\n"
                      "  model { preset: \"llama3-8b\" }\n"
                      "  layout { text: \"fsdp=16,tpp=4\" }\n"
                      "  batch_tokens: 262144\n"
                      "  seq: 4096\n"
                      "}\n"),
              StartsWith("t.textproto:4:12: train.layout.text: layout 'fsdp=16,tpp=4': unknown "
                         "key 'tpp' (did you mean 'tp'?)"));
  EXPECT_THAT(ErrorOf("system { preset: \"tpu-v5p:4x4x4\" }\n"
                      "sweep {\n"
                      "  model { preset: \"llama3-7b\" }\n"
                      "  batch_tokens: 262144\n"
                      "  seq: 4096\n"
                      "}\n"),
              StartsWith("t.textproto:3:11: sweep.model.preset: unknown model 'llama3-7b' (did "
                         "you mean 'llama3-8b'?)"));
}

TEST(ScenarioFileTest, ValidateScenarioWithoutAFileNamesThePath) {
  Scenario s;
  s.mutable_system()->set_preset("h100:8");
  s.mutable_collective()->set_op(Collective::P2P);
  s.mutable_collective()->set_bytes(1e6);
  s.mutable_collective()->set_src("0");
  EXPECT_EQ(ValidateScenario(s).message(), "collective.dst: missing; op P2P needs src and dst");
  s.mutable_collective()->set_dst("8");
  EXPECT_EQ(ValidateScenario(s).message(),
            "collective.dst: expected a chip index from 0 to 7 or torus coordinates like \"1,0\" "
            "(got \"8\")");
  s.mutable_collective()->set_dst("7");
  EXPECT_TRUE(ValidateScenario(s).ok());
}

// The checks build the system once and hand it over: a loaded file carries it, and
// CheckScenario returns it, or the checks' error.
TEST(ScenarioFileTest, ChecksHandOverTheSystemTheyBuilt) {
  sim::StatusOr<LoadedScenario> loaded = ParseScenarioFile(kCollective, "t.textproto");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->system.name, "tpu-v5e:16x16");
  EXPECT_EQ(loaded->system.fabric.chip_count(), 256u);
  Scenario s;
  s.mutable_system()->set_preset("h100:16");
  s.mutable_collective()->set_op(Collective::ALL_GATHER);
  s.mutable_collective()->set_bytes(1e6);
  sim::StatusOr<topology::System> system = CheckScenario(s);
  ASSERT_TRUE(system.ok()) << system.status();
  EXPECT_EQ(system->fabric.chip_count(), 16u);
  // A system built already is checked, not built again, with the same errors.
  sim::StatusOr<topology::System> again = CheckScenario(s, {}, *std::move(system));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->fabric.chip_count(), 16u);
  s.mutable_collective()->set_bytes(-1);
  EXPECT_EQ(CheckScenario(s).status().message(),
            "collective.bytes: must be > 0 and at most 1e15 (got -1)");
  EXPECT_EQ(CheckScenario(s, {}, *std::move(again)).status().message(),
            "collective.bytes: must be > 0 and at most 1e15 (got -1)");
}

TEST(ScenarioFileTest, UnspecifiedEnumValues) {
  // A required enum at its 0 value is missing; an optional one written as 0 is refused.
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "collective { op: OP_UNSPECIFIED bytes: 1e9 }\n"),
            "t.textproto:2:14: collective.op: OP_UNSPECIFIED means not given; expected one of "
            "ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE, ALL_TO_ALL, BROADCAST, P2P, SHIFT");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5p:4x4x4\" }\n"
                    "train {\n"
                    "  model { preset: \"llama3-8b\" }\n"
                    "  layout { fsdp: 64 }\n"
                    "  batch_tokens: 262144 seq: 4096\n"
                    "  recompute: RECOMPUTE_UNSPECIFIED\n"
                    "}\n"),
            "t.textproto:6:3: train.recompute: RECOMPUTE_UNSPECIFIED means not given; expected "
            "one of NONE, SELECTIVE, FULL, SAVE_NAMED");
}

TEST(ScenarioFileTest, InferErrors) {
  const std::string head =
      "system { preset: \"tpu-v5e:16x16\" }\n"
      "infer {\n"
      "  model { preset: \"llama3-70b\" }\n";
  EXPECT_EQ(ErrorOf(head + "  layout { text: \"tp=8\" dp: 32 }\n}\n"),
            "t.textproto:4:3: infer.layout: give the layout as text or as axis fields, not both");
  EXPECT_EQ(ErrorOf(head + "  layout { tp: 8 dp: 32 }\n  phase: DECODE\n  context: 8192\n}\n"),
            "t.textproto:2:1: infer.batch: missing; give the sequences per step (several for "
            "one row each)");
  EXPECT_EQ(ErrorOf(head + "  layout { tp: 8 dp: 32 }\n  phase: DECODE\n  batch: [8, 0]\n"
                           "  context: 8192\n}\n"),
            "t.textproto:6:3: infer.batch[1]: must be an integer in [1, 16777216] (got 0)");
  EXPECT_EQ(ErrorOf(head + "  layout { tp: 8 dp: 32 }\n  phase: PREFILL\n  batch: 8\n"
                           "  context: 8192\n  collective_dtype: INT4\n}\n"),
            "t.textproto:8:3: infer.collective_dtype: INT4 and FP8 are for weights and KV caches "
            "only; expected BF16 or INT8");
  EXPECT_EQ(ErrorOf(head + "  layout { tp: 8 dp: 32 }\n  phase: PREFILL\n  batch: 8\n"
                           "  context: 8192\n  prefill_len: 1024\n}\n"),
            "t.textproto:2:1: infer.decode_len: missing; the serving estimate needs prefill_len "
            "and decode_len");
  EXPECT_EQ(ErrorOf(head + "  layout { tp: 8 dp: 32 }\n  phase: PREFILL\n  batch: 8\n"
                           "  context: 8192\n  prefill_batch: 4\n}\n"),
            "t.textproto:8:3: infer.prefill_batch: needs prefill_len and decode_len (it sizes a "
            "deployment's prefill steps)");
}

TEST(ScenarioFileTest, OutputsMustFitTheCommand) {
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "topology {}\n"
                    "outputs { trace: \"t.json\" }\n"),
            "t.textproto:3:11: outputs.trace: only collective, train and infer write traces");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "collective { op: ALL_REDUCE bytes: 1e9 }\n"
                    "outputs {\n"
                    "  trace: \"t.json\"\n"
                    "  trace_chips: \"0-300\"\n"
                    "}\n"),
            "t.textproto:5:3: outputs.trace_chips: expected \"all\" or chip indices and ranges "
            "from 0 to 255 like \"0-15,32\" (got \"0-300\")");
}

// The train options of the command line (--attention, --every-chip, --flows, --write-schedule).
TEST(ScenarioFileTest, TrainOptionsOfTheCommandLine) {
  const std::string train =
      "system { preset: \"tpu-v5p:4x4x4\" }\n"
      "train {\n"
      "  model { preset: \"llama3-8b\" }\n"
      "  layout { fsdp: 64 }\n"
      "  batch_tokens: 262144 seq: 4096\n";
  EXPECT_EQ(ErrorOf(train + "  attention: MATERIALIZED every_chip: true flows: true\n}\n"
                            "outputs { write_schedule: \"step.pb\" }\n"),
            "");
  EXPECT_EQ(ErrorOf(train + "  attention: ATTENTION_UNSPECIFIED\n}\n"),
            "t.textproto:6:3: train.attention: ATTENTION_UNSPECIFIED means not given; expected "
            "one of FLASH, MATERIALIZED, FA2, CUDNN");
  EXPECT_EQ(ErrorOf(train + "}\noutputs { write_schedule: \"\" }\n"),
            "t.textproto:7:11: outputs.write_schedule: must not be empty");
  EXPECT_EQ(ErrorOf("system { preset: \"tpu-v5e:16x16\" }\n"
                    "collective { op: ALL_REDUCE bytes: 1e9 }\n"
                    "outputs { write_schedule: \"step.pb\" }\n"),
            "t.textproto:3:11: outputs.write_schedule: only train writes a schedule");
}

TEST(ScenarioFileTest, LoadReportsUnreadableAndOversizedFiles) {
  sim::StatusOr<Scenario> missing = LoadScenario("/nonexistent/podsim.textproto");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), sim::Status::Code::kIoError);
  EXPECT_EQ(missing.status().message(),
            "cannot read scenario '/nonexistent/podsim.textproto': No such file or directory");

  const std::string huge(kMaxScenarioBytes + 1, '#');
  sim::StatusOr<Scenario> big = ParseScenarioText(huge, "big.textproto");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), sim::Status::Code::kOutOfRange);
}

// Every example loads, dumps and reads back equal; together they cover every command.
TEST(ScenarioFileTest, ExamplesLoad) {
  std::set<int> commands;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(PODSIM_SCENARIO_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".textproto") continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    sim::StatusOr<Scenario> scenario = LoadScenario(entry.path().string());
    ASSERT_TRUE(scenario.ok()) << scenario.status();
    commands.insert(scenario->command_case());
    sim::StatusOr<Scenario> again = ParseScenarioText(DumpScenario(*scenario), "dump");
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(MessageDifferencer::Equals(*scenario, *again));
  }
  EXPECT_GE(files, 5);
  EXPECT_EQ(commands, (std::set<int>{Scenario::kTopology, Scenario::kCollective, Scenario::kTrain,
                                     Scenario::kInfer, Scenario::kSweep}));
}

}  // namespace
}  // namespace podsim::scenario
