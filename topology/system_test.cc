#include "topology/system.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "topology/fabric_metrics.h"

namespace podsim::topology {
namespace {

TEST(ParseSystemTest, EveryDesignFormParses) {
  struct Case {
    const char* text;
    uint32_t chips;
    SystemKind kind;
  };
  for (const Case& c : std::vector<Case>{
           {"tpu-v5p:16x20x28", 8960, SystemKind::kTpu},
           {"tpu-v4p:4x4x4", 64, SystemKind::kTpu},
           {"tpu-v5e:8x4", 32, SystemKind::kTpu},
           {"tpu-v5e:16x16,slices=4", 1024, SystemKind::kTpu},
           {"tpu-v6e:16x16", 256, SystemKind::kTpu},
           {"tpu7x:4x4x8", 128, SystemKind::kTpu},
           {"h100:8", 8, SystemKind::kGpu},
           {"h200:8", 8, SystemKind::kGpu},
           {"a100:1024", 1024, SystemKind::kGpu},
           {"h100:1024", 1024, SystemKind::kGpu},
           {"h100:16384", 16384, SystemKind::kGpu},
           {"b200:8", 8, SystemKind::kGpu},
           {"gb200:72", 72, SystemKind::kGpu},
           {"ring:1024,bw=1e11,lat=1e-6", 1024, SystemKind::kRing},
           {"torus:4x4", 16, SystemKind::kTorus},
           {"torus:4x4x4,bw=9e10,lat=5e-7", 64, SystemKind::kTorus},
           {"switch:16,bw=5e10", 16, SystemKind::kSwitch},
       }) {
    sim::StatusOr<System> system = ParseSystem(c.text);
    ASSERT_TRUE(system.ok()) << c.text << ": " << system.status();
    EXPECT_EQ(system->name, c.text);
    EXPECT_EQ(system->fabric.chip_count(), c.chips) << c.text;
    EXPECT_EQ(system->kind, c.kind) << c.text;
  }
}

TEST(ParseSystemTest, OptionsReachTheFabric) {
  System ring = ParseSystem("ring:8,bw=1e11,lat=2e-6").value();
  EXPECT_DOUBLE_EQ(ring.fabric.link(0).bandwidth_bytes_per_s, 1e11);
  EXPECT_EQ(ring.fabric.link(0).latency, sim::Time::Microseconds(2));
  System mesh = ParseSystem("torus:4x4,wrap=y").value();
  EXPECT_EQ(mesh.fabric.torus()->wraps, (std::vector<bool>{false, true}));
  System v5p = ParseSystem("tpu-v5p:4x4x8,wrap=none").value();
  EXPECT_EQ(v5p.fabric.torus()->wraps, (std::vector<bool>{false, false, false}));
  System tapered = ParseSystem("h100:512,oversub=2").value();
  EXPECT_DOUBLE_EQ(tapered.fabric.gpu()->oversubscription, 2);
  EXPECT_DOUBLE_EQ(BisectionBytesPerS(tapered.fabric),
                   BisectionBytesPerS(ParseSystem("h100:512").value().fabric) / 2);
  // nic= sets each GPU's NIC links (BLOOM's Omni-Path: 4 x 100 Gb/s per 8 GPUs).
  System omni = ParseSystem("a100:16,nic=6.25e9").value();
  int nic_links = 0;
  for (LinkIndex i = 0; i < omni.fabric.link_count(); ++i) {
    const Link& link = omni.fabric.link(i);
    if (link.kind != LinkKind::kInfiniBand || omni.fabric.vertex_kind(link.src) != VertexKind::kNic)
      continue;
    EXPECT_DOUBLE_EQ(link.bandwidth_bytes_per_s, 6.25e9);
    ++nic_links;
  }
  EXPECT_EQ(nic_links, 16);
  // hbm= and hbm_bw= set each GPU's memory (torchtitan's Grand Teton H100: 96 GB at 2.4 TB/s).
  System teton = ParseSystem("h100:8,hbm=96e9,hbm_bw=2.4e12").value();
  EXPECT_DOUBLE_EQ(teton.chip.hbm_bytes, 96e9);
  EXPECT_DOUBLE_EQ(teton.chip.hbm_bytes_per_s, 2.4e12);
  EXPECT_DOUBLE_EQ(teton.chip.bf16_flops_per_s,
                   ParseSystem("h100:8").value().chip.bf16_flops_per_s);
  System generic = ParseSystem("switch:4").value();
  EXPECT_EQ(generic.chip.name, "generic");
  EXPECT_DOUBLE_EQ(generic.fabric.link(0).bandwidth_bytes_per_s, 4.5e10);  // Default bw.
}

// A slice of a system: the same NAME and keys with another SIZE (the sweep's smaller slices).
TEST(ParseSystemTest, ResizedSystemKeepsTheNameAndKeys) {
  const System pod = ParseSystem("tpu-v5p:16x20x28,wrap=none").value();
  const System slice = ResizedSystem(pod, "16x16x16").value();
  EXPECT_EQ(slice.name, "tpu-v5p:16x16x16,wrap=none");
  EXPECT_EQ(slice.fabric.chip_count(), 4096u);
  EXPECT_EQ(ResizedSystem(ParseSystem("h100:1024").value(), "512").value().name, "h100:512");
  EXPECT_FALSE(ResizedSystem(pod, "0x1x1").ok());
}

TEST(ParseSystemTest, MalformedStringsGetOneClearMessage) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"h100",
       "system 'h100': expected NAME:SIZE[,key=value]..., like tpu-v5p:16x20x28, "
       "h100:1024 or ring:8,bw=1e11,lat=1e-6"},
      {"",
       "system '': expected NAME:SIZE[,key=value]..., like tpu-v5p:16x20x28, h100:1024 or "
       "ring:8,bw=1e11,lat=1e-6"},
      {"h10:8",
       "system 'h10:8': unknown system 'h10' (did you mean 'h100'?); known: tpu-v4p, "
       "tpu-v5e, tpu-v5p, tpu-v6e, tpu7x, a100, h100, h200, b200, gb200, ring, torus, "
       "switch"},
      {"tpu-v5p:16x20", "tpu-v5p:16x20: a tpu-v5p slice needs 3 axes like 4x4x8 (got 2)"},
      {"tpu-v5p:16x20xa",
       "system 'tpu-v5p:16x20xa': bad shape '16x20xa': expected axis lengths "
       ">= 1 joined by 'x', like 16x20x28 or 8x16"},
      {"tpu-v5e:8x0",
       "system 'tpu-v5e:8x0': bad shape '8x0': expected axis lengths >= 1 joined "
       "by 'x', like 16x20x28 or 8x16"},
      {"tpu-v5e:16x16,slice=4",
       "system 'tpu-v5e:16x16,slice=4': unknown option 'slice' for "
       "tpu-v5e (did you mean 'slices'?); allowed: slices, wrap"},
      {"tpu-v5e:16x16,slices=0",
       "system 'tpu-v5e:16x16,slices=0': slices must be a whole number "
       "from 1 to 4096 (got '0')"},
      {"tpu-v5p:4x4x4,wrap=xw",
       "system 'tpu-v5p:4x4x4,wrap=xw': bad wrap 'xw': expected none, all "
       "or the axes that wrap, each once, from 'xyz'"},
      {"h100:12", "h100:12: more than one node needs whole nodes of 8 GPUs (got 12)"},
      {"h100:many", "system 'h100:many': bad GPU count 'many': expected a whole number >= 1"},
      {"h100:8,oversb=2",
       "system 'h100:8,oversb=2': unknown option 'oversb' for h100 (did you "
       "mean 'oversub'?); allowed: oversub, nic, hbm, hbm_bw"},
      {"a100:16,nic=0",
       "system 'a100:16,nic=0': nic must be a number of bytes/s from 1e6 to 1e15 (got '0')"},
      {"h100:8,hbm_bw=2e16",
       "system 'h100:8,hbm_bw=2e16': hbm_bw must be a number of bytes/s from 1e6 to 1e15 (got "
       "'2e16')"},
      {"h100:8,hbm=-1",
       "system 'h100:8,hbm=-1': hbm must be a number of bytes from 1e6 to 1e15 (got '-1')"},
      {"h100:8,hbm_bw=abc",
       "system 'h100:8,hbm_bw=abc': hbm_bw must be a number of bytes/s from 1e6 to 1e15 (got "
       "'abc')"},
      // An audit of 2026-12-07: "oversub must be a number of (a ratio) >= 0".
      {"h100:16,oversub=-2",
       "system 'h100:16,oversub=-2': oversub must be a ratio >= 1 (got '-2')"},
      {"h100:16,oversub",
       "system 'h100:16,oversub': option 'oversub' should be key=value; "
       "expected NAME:SIZE[,key=value]..., like tpu-v5p:16x20x28, h100:1024 or "
       "ring:8,bw=1e11,lat=1e-6"},
      {"ring:8,bw=fast",
       "system 'ring:8,bw=fast': bw must be a number of bytes/s >= 0 (got "
       "'fast')"},
      {"ring:8,bw=0", "system 'ring:8,bw=0': bw must be > 0 bytes/s"},
      {"ring:8,lat=5", "system 'ring:8,lat=5': lat is seconds per hop and must be <= 1 (got '5')"},
      {"ring:8,bw=1e11,bw=2e11", "system 'ring:8,bw=1e11,bw=2e11': option 'bw' given twice"},
      {"torus:4x4x4x4",
       "system 'torus:4x4x4x4': bad shape '4x4x4x4': at most 3 axes, like 4x4 "
       "or 4x4x8"},
      {"ring:0", "system 'ring:0': bad chip count '0': expected a whole number >= 1"},
      // issue 16 D14: a size past the limit names the limit.
      {"ring:100000000",
       "system 'ring:100000000': bad chip count '100000000': over podsim's limit of 1048576 chips"},
      {"torus:4x99999999999999999999",
       "system 'torus:4x99999999999999999999': bad shape '4x99999999999999999999': axis length "
       "99999999999999999999 is over podsim's limit of 1048576"},
      {"switch:99999999999",
       "system 'switch:99999999999': bad chip count '99999999999': over podsim's limit of "
       "1048576 chips"},
      {"torus:1024x1024x1024",
       "system 'torus:1024x1024x1024': a torus of more than 1048576 chips "
       "is beyond podsim's limit"},
  };
  for (const auto& [text, message] : cases) {
    sim::StatusOr<System> system = ParseSystem(text);
    ASSERT_FALSE(system.ok()) << text;
    EXPECT_EQ(system.status().message(), message) << text;
  }
}

TEST(MetricsTest, TorusDiameterBisectionInjection) {
  System v4 = ParseSystem("tpu-v4p:4x4x4").value();
  EXPECT_EQ(DiameterHops(v4.fabric), 6);
  // 16 rings per axis, each cut twice, 4.5e10 per link: 1.44e12 one way.
  EXPECT_DOUBLE_EQ(BisectionBytesPerS(v4.fabric), 16 * 2 * 4.5e10);
  EXPECT_DOUBLE_EQ(ScaleUpInjection(v4.fabric).max_bytes_per_s, 6 * 4.5e10);
  System mesh = ParseSystem("tpu-v5p:2x2x4").value();
  EXPECT_EQ(DiameterHops(mesh.fabric), 1 + 1 + 3);
  EXPECT_DOUBLE_EQ(ScaleUpInjection(mesh.fabric).min_bytes_per_s, 3 * 9e10);
  EXPECT_DOUBLE_EQ(ScaleUpInjection(mesh.fabric).max_bytes_per_s, 4 * 9e10);
  System pod = ParseSystem("tpu-v5p:16x20x28").value();
  EXPECT_EQ(DiameterHops(pod.fabric), 8 + 10 + 14);
  // Cutting the 28 axis: 16*20 rings, twice each.
  EXPECT_DOUBLE_EQ(BisectionBytesPerS(pod.fabric), 16 * 20 * 2 * 9e10);
  System v5e = ParseSystem("tpu-v5e:8x16").value();
  EXPECT_EQ(DiameterHops(v5e.fabric), 7 + 8);
  System slices = ParseSystem("tpu-v5e:16x16,slices=4").value();
  // Half the slices' hosts: 2 slices x 32 hosts x 2.5e10.
  EXPECT_DOUBLE_EQ(BisectionBytesPerS(slices.fabric), 2 * 32 * 2.5e10);
  EXPECT_EQ(DiameterHops(slices.fabric), 16);
}

// issue 16 D4: the torus diameter is a closed form (linear time on ring:1048576); it must equal
// the longest route over all pairs.
TEST(MetricsTest, TorusDiameterClosedFormEqualsLongestRoute) {
  for (const char* text :
       {"ring:7", "ring:8", "torus:3x5x2", "torus:4x4x4,wrap=xz", "tpu-v5e:4x4", "tpu-v5p:2x2x4",
        "tpu-v5e:4x2,slices=2", "tpu-v5p:4x4x4,wrap=none", "torus:6x1x3"}) {
    System system = ParseSystem(text).value();
    size_t longest = 0;
    for (VertexId src = 0; src < system.fabric.chip_count(); ++src) {
      for (VertexId dst = 0; dst < system.fabric.chip_count(); ++dst) {
        longest = std::max(longest, system.fabric.Route(src, dst).size());
      }
    }
    EXPECT_EQ(DiameterHops(system.fabric), static_cast<int>(longest)) << text;
  }
}

TEST(MetricsTest, GpuBisectionMatchesHardwareReference) {
  // hardware.md 1.3 full-duplex bandwidth per unit: node 3.6, leaf (SU) 12.8, spine 51.2 TB/s.
  EXPECT_DOUBLE_EQ(2 * BisectionBytesPerS(ParseSystem("h100:8").value().fabric), 3.6e12);
  EXPECT_DOUBLE_EQ(2 * BisectionBytesPerS(ParseSystem("h100:256").value().fabric), 12.8e12);
  EXPECT_DOUBLE_EQ(2 * BisectionBytesPerS(ParseSystem("h100:1024").value().fabric), 51.2e12);
  // Full bisection all the way up: 50 GB/s per GPU.
  EXPECT_DOUBLE_EQ(2 * BisectionBytesPerS(ParseSystem("h100:16384").value().fabric), 16384 * 50e9);
  EXPECT_DOUBLE_EQ(2 * BisectionBytesPerS(ParseSystem("gb200:72").value().fabric), 72 * 900e9);
  System node = ParseSystem("h100:8").value();
  EXPECT_EQ(DiameterHops(node.fabric), 2);
  EXPECT_DOUBLE_EQ(ScaleUpInjection(node.fabric).max_bytes_per_s, 450e9);
  EXPECT_EQ(DiameterHops(ParseSystem("h100:1024").value().fabric), 6);
  EXPECT_EQ(DiameterHops(ParseSystem("h100:16384").value().fabric), 8);
  EXPECT_EQ(DiameterHops(ParseSystem("switch:16").value().fabric), 2);
  EXPECT_EQ(DiameterHops(ParseSystem("ring:9").value().fabric), 4);
  EXPECT_DOUBLE_EQ(BisectionBytesPerS(ParseSystem("ring:8,bw=1e9").value().fabric), 2e9);
  EXPECT_DOUBLE_EQ(BisectionBytesPerS(ParseSystem("switch:9,bw=1e9").value().fabric), 4e9);
}

}  // namespace
}  // namespace podsim::topology
