#include "topology/chip_spec.h"

#include <gtest/gtest.h>

namespace podsim::topology {
namespace {

TEST(ChipPresetTest, EveryPresetHasComputeMemoryAndLinks) {
  for (std::string_view name : ChipPresetNames()) {
    sim::StatusOr<ChipSpec> chip = ChipPreset(name);
    ASSERT_TRUE(chip.ok()) << name;
    EXPECT_EQ(chip->name, name);
    EXPECT_GT(chip->bf16_flops_per_s, 0) << name;
    EXPECT_GT(chip->int8_flops_per_s, 0) << name;
    EXPECT_GT(chip->hbm_bytes, 0) << name;
    EXPECT_GT(chip->hbm_bytes_per_s, 0) << name;
    EXPECT_GT(chip->scale_up_ports, 0) << name;
    EXPECT_GT(chip->scale_up_link_bytes_per_s, 0) << name;
    EXPECT_GT(chip->pcie_bytes_per_s, 0) << name;
    EXPECT_GT(chip->scale_out_bytes_per_s, 0) << name;
    EXPECT_GT(chip->hop_latency, sim::Time::Zero()) << name;
  }
}

TEST(ChipPresetTest, NumbersFromHardwareReference) {
  ChipSpec v5p = ChipPreset("tpu-v5p").value();
  EXPECT_DOUBLE_EQ(v5p.bf16_flops_per_s, 4.59e14);
  EXPECT_DOUBLE_EQ(v5p.scale_up_link_bytes_per_s, 9e10);
  EXPECT_EQ(v5p.scale_up_ports, 6);
  EXPECT_EQ(v5p.chips_per_host, 4);
  // "540GB/s egress along all axes of the 3D torus" (hardware.md 1.3).
  EXPECT_DOUBLE_EQ(v5p.scale_up_ports * v5p.scale_up_link_bytes_per_s, 5.4e11);
  ChipSpec v5e = ChipPreset("tpu-v5e").value();
  EXPECT_EQ(v5e.scale_up_ports, 4);
  EXPECT_EQ(v5e.chips_per_host, 8);
  EXPECT_DOUBLE_EQ(v5e.hbm_bytes_per_s, 8.2e11);
  EXPECT_DOUBLE_EQ(v5e.scale_out_bytes_per_s, 3.125e9);
  // "18*25 = 450GB/s egress per GPU" (hardware.md 1.3).
  ChipSpec h100 = ChipPreset("h100").value();
  EXPECT_DOUBLE_EQ(h100.scale_up_ports * h100.scale_up_link_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(h100.bf16_flops_per_s, 9.89e14);
  ChipSpec a100 = ChipPreset("a100").value();
  EXPECT_DOUBLE_EQ(a100.scale_up_ports * a100.scale_up_link_bytes_per_s, 300e9);
  EXPECT_EQ(a100.fp8_flops_per_s, 0);  // Ampere: no fp8.
  ChipSpec b200 = ChipPreset("b200").value();
  EXPECT_DOUBLE_EQ(b200.scale_up_ports * b200.scale_up_link_bytes_per_s, 900e9);
  EXPECT_DOUBLE_EQ(ChipPreset("h200").value().hbm_bytes, 141e9);
}

TEST(ChipPresetTest, UnknownNameSuggestsNearest) {
  sim::StatusOr<ChipSpec> chip = ChipPreset("h10");
  ASSERT_FALSE(chip.ok());
  EXPECT_EQ(chip.status().code(), sim::Status::Code::kNotFound);
  EXPECT_EQ(chip.status().message(),
            "unknown chip 'h10' (did you mean 'h100'?); known: tpu-v4p, tpu-v5e, tpu-v5p, "
            "tpu-v6e, tpu7x, a100, h100, h200, b200, gb200");
  EXPECT_EQ(ChipPreset("tpu-v5").status().message().substr(0, 44),
            "unknown chip 'tpu-v5' (did you mean 'tpu-v5e");
  EXPECT_EQ(ChipPreset("zzzzzzzzzz").status().message().find("did you mean"), std::string::npos);
}

}  // namespace
}  // namespace podsim::topology
