#include "scenario/scenario_build.h"

#include <gtest/gtest.h>

#include "scenario/scenario_file.h"
#include "topology/chip_spec.h"

namespace podsim::scenario {
namespace {

// A v5p with twice the HBM and faster links, on a generic 4x4x4 torus.
constexpr const char* kCustomChip = R"(system {
  custom {
    chip {
      base: "tpu-v5p"
      name: "v5p-2x-hbm"
      hbm_bytes: 1.9327352832e11
      scale_up_link_bytes_per_s: 1e11
      hop_latency_s: 2e-6
    }
    fabric { kind: TORUS shape: [4, 4, 4] wrap: "xy" }
  }
}
topology {}
)";

TEST(ScenarioBuildTest, CustomChipInheritsFromItsBase) {
  sim::StatusOr<Scenario> scenario = ParseScenarioText(kCustomChip, "custom.textproto");
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  sim::StatusOr<topology::System> system = BuildSystem(scenario->system());
  ASSERT_TRUE(system.ok()) << system.status();
  sim::StatusOr<topology::ChipSpec> v5p = topology::ChipPreset("tpu-v5p");
  ASSERT_TRUE(v5p.ok());

  EXPECT_EQ(system->name, "torus:4x4x4 of v5p-2x-hbm");
  EXPECT_EQ(system->kind, topology::SystemKind::kTorus);
  const topology::ChipSpec& chip = system->chip;
  EXPECT_EQ(chip.name, "v5p-2x-hbm");
  EXPECT_EQ(chip.family, topology::ChipFamily::kTpu);
  EXPECT_EQ(chip.hbm_bytes, 1.9327352832e11);
  EXPECT_EQ(chip.scale_up_link_bytes_per_s, 1e11);
  EXPECT_EQ(chip.hop_latency, sim::Time::Microseconds(2));
  // Inherited unchanged.
  EXPECT_EQ(chip.bf16_flops_per_s, v5p->bf16_flops_per_s);
  EXPECT_EQ(chip.hbm_bytes_per_s, v5p->hbm_bytes_per_s);
  EXPECT_EQ(chip.scale_up_ports, v5p->scale_up_ports);
  EXPECT_EQ(chip.chips_per_host, v5p->chips_per_host);

  const topology::Fabric& fabric = system->fabric;
  EXPECT_EQ(fabric.chip_count(), 64u);
  EXPECT_TRUE(fabric.Wraps(0));
  EXPECT_TRUE(fabric.Wraps(1));
  EXPECT_FALSE(fabric.Wraps(2));
  for (const topology::Link& link : fabric.links()) {
    EXPECT_EQ(link.bandwidth_bytes_per_s, 1e11);
    EXPECT_EQ(link.latency, sim::Time::Microseconds(2));
  }
}

TEST(ScenarioBuildTest, CustomChipWithoutBase) {
  System spec;
  Chip* chip = spec.mutable_custom()->mutable_chip();
  chip->set_bf16_flops_per_s(1e15);
  chip->set_scale_up_link_bytes_per_s(5e10);
  spec.mutable_custom()->mutable_fabric()->set_kind(Fabric::RING);
  spec.mutable_custom()->mutable_fabric()->add_shape(8);
  sim::StatusOr<topology::System> system = BuildSystem(spec);
  ASSERT_TRUE(system.ok()) << system.status();
  EXPECT_EQ(system->name, "ring:8 of custom");
  EXPECT_EQ(system->chip.family, topology::ChipFamily::kGeneric);
  EXPECT_EQ(system->chip.scale_up_ports, 2);
  EXPECT_EQ(system->chip.hbm_bytes, 0);
  EXPECT_EQ(system->fabric.chip_count(), 8u);
}

TEST(ScenarioBuildTest, CustomSystemErrors) {
  auto error = [](const std::string& system) {
    sim::StatusOr<Scenario> s = ParseScenarioText(system + "\ntopology {}\n", "c.textproto");
    return s.ok() ? std::string() : s.status().message();
  };
  EXPECT_EQ(error("system { custom { chip { hbm_bytes: 1e9 } fabric { kind: RING shape: 4 } } }"),
            "c.textproto:1:19: system.custom.chip.scale_up_link_bytes_per_s: missing; every link "
            "of the fabric carries it (give it or a base)");
  EXPECT_EQ(error("system { custom { chip { base: \"h10\" } fabric { kind: RING shape: 4 } } }"),
            "c.textproto:1:26: system.custom.chip.base: unknown chip 'h10' (did you mean "
            "'h100'?); known: tpu-v4p, tpu-v5e, tpu-v5p, tpu-v6e, tpu7x, a100, h100, h200, b200, "
            "gb200");
  EXPECT_EQ(error("system { custom {\n"
                  "  chip { base: \"h100\" hbm_bytes: -1 }\n"
                  "  fabric { kind: SWITCH shape: 8 }\n"
                  "} }"),
            "c.textproto:2:23: system.custom.chip.hbm_bytes: must be a finite number >= 0 (got "
            "-1)");
  EXPECT_EQ(error("system { custom {\n"
                  "  chip { base: \"h100\" }\n"
                  "  fabric { kind: RING shape: [2, 4] }\n"
                  "} }"),
            "c.textproto:3:23: system.custom.fabric.shape: a RING needs one length, its chip "
            "count, like [8] (got 2)");
  EXPECT_EQ(error("system { custom {\n"
                  "  chip { base: \"h100\" }\n"
                  "  fabric { kind: TORUS shape: [4, 4] wrap: \"xz\" }\n"
                  "} }"),
            "c.textproto:3:38: system.custom.fabric.wrap: expected \"all\", \"none\" or the axes "
            "that wrap, each once, from \"xy\" (got \"xz\")");
  EXPECT_EQ(error("system { custom {\n"
                  "  chip { base: \"h100\" }\n"
                  "  fabric { shape: [4, 4] }\n"
                  "} }"),
            "c.textproto:3:3: system.custom.fabric.kind: missing; expected one of RING, TORUS, "
            "SWITCH");
  EXPECT_EQ(error("system { custom {\n"
                  "  chip { base: \"tpu-v5p\" chips_per_host: 8 host_shape: [2, 2] }\n"
                  "  fabric { kind: TORUS shape: [4, 4] }\n"
                  "} }"),
            "c.textproto:2:26: system.custom.chip.chips_per_host: must equal the product of "
            "host_shape, 4 (got 8)");
}

TEST(ScenarioBuildTest, CustomModelOverridesItsBase) {
  Model spec;
  CustomModel* custom = spec.mutable_custom();
  custom->set_base("llama3-8b");
  custom->set_layers(16);
  sim::StatusOr<workloads::ModelSpec> model = BuildModel(spec, "train.model");
  ASSERT_TRUE(model.ok()) << model.status();
  sim::StatusOr<workloads::ModelSpec> base = workloads::ParseModel("llama3-8b");
  ASSERT_TRUE(base.ok());
  EXPECT_EQ(model->name, "llama3-8b-custom");
  EXPECT_EQ(model->layers, 16);
  EXPECT_EQ(model->d_model, base->d_model);
  EXPECT_EQ(model->kv_heads, base->kv_heads);

  Model bare;
  bare.mutable_custom()->set_layers(2);
  EXPECT_EQ(BuildModel(bare, "sweep.model").status().message(),
            "sweep.model.custom.d_model: missing; without a base, layers, d_model, ffn, heads, "
            "kv_heads, head_dim and vocab are required");
  custom->set_kv_heads(3);
  EXPECT_EQ(BuildModel(spec, "train.model").status().message(),
            "train.model.custom.kv_heads: kv_heads must divide heads (got heads=32, "
            "kv_heads=3)");
}

TEST(ScenarioBuildTest, TrainLayoutMergesTrainFields) {
  Train train;
  train.mutable_layout()->set_text("dp=2,pp=4,microbatches=8");
  train.set_schedule(Train::INTERLEAVED);
  train.set_virtual_stages(2);
  sim::StatusOr<workloads::Layout> layout = BuildTrainLayout(train);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->ToString(),
            "dp=2,fsdp=1,tp=1,pp=4,microbatches=8,schedule=interleaved,virtual_stages=2");

  train.set_microbatches(4);
  EXPECT_EQ(BuildTrainLayout(train).status().message(),
            "train.microbatches: 4 conflicts with microbatches=8 in train.layout.text");

  Train fields;
  fields.mutable_layout()->set_fsdp(8);
  fields.mutable_layout()->set_tp(0);
  EXPECT_EQ(BuildTrainLayout(fields).status().message(),
            "train.layout.tp: must be an integer in [1, 1048576] (got 0)");
  fields.mutable_layout()->set_tp(4);
  fields.mutable_layout()->set_text("fsdp=8");
  EXPECT_EQ(BuildTrainLayout(fields).status().message(),
            "train.layout.fsdp: give the layout as text or as axis fields, not both");
  fields.mutable_layout()->clear_text();
  fields.set_virtual_stages(2);
  EXPECT_EQ(BuildTrainLayout(fields).status().message(),
            "train.virtual_stages: virtual_stages=2 needs schedule: INTERLEAVED");
}

// Issue 14: micro_batch_size gives the microbatch count from the batch, as the text's mbs= does.
TEST(ScenarioBuildTest, MicroBatchSizeGivesTheCount) {
  Train train;
  train.mutable_layout()->set_text("dp=2,pp=4");
  train.set_batch_tokens(64 * 4096);
  train.set_seq(4096);
  train.set_micro_batch_size(4);
  sim::StatusOr<workloads::Layout> layout = BuildTrainLayout(train);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->ToString(), "dp=2,fsdp=1,tp=1,pp=4,microbatches=8,mbs=4");
  train.set_micro_batch_size(5);
  EXPECT_EQ(BuildTrainLayout(train).status().message(),
            "train.micro_batch_size: layout dp=2,fsdp=1,tp=1,pp=4,mbs=5: the batch of 64 "
            "sequences must be a multiple of dp*fsdp*mbs = 10");
  train.mutable_layout()->set_text("dp=2,pp=4,mbs=2");
  EXPECT_EQ(BuildTrainLayout(train).status().message(),
            "train.micro_batch_size: 5 conflicts with micro_batch_size=2 in train.layout.text");
}

TEST(ScenarioBuildTest, CollectiveOpNamesMatchTheCommandLine) {
  for (int v = Collective::Op_MIN + 1; v <= Collective::Op_MAX; ++v) {
    const auto op = static_cast<Collective::Op>(v);
    EXPECT_EQ(CollectiveOpFromName(CollectiveOpName(op)), op) << Collective::Op_Name(op);
  }
  EXPECT_EQ(CollectiveOpName(Collective::ALL_REDUCE), "all-reduce");
  EXPECT_EQ(CollectiveOpFromName("allreduce"), std::nullopt);
}

TEST(ScenarioBuildTest, RecomputePolicy) {
  Train train;
  EXPECT_EQ(RecomputePolicyOf(train), workloads::RecomputePolicy::kNone);
  train.set_recompute(Train::SELECTIVE);
  EXPECT_EQ(RecomputePolicyOf(train), workloads::RecomputePolicy::kSelective);
}

}  // namespace
}  // namespace podsim::scenario
