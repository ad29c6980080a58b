#include "workloads/loss_kernel.h"

#include <gtest/gtest.h>

#include <string>

#include "topology/chip_spec.h"
#include "workloads/eager_kernels.h"
#include "workloads/framework.h"
#include "workloads/layer_ops.h"
#include "workloads/memory.h"
#include "workloads/model_spec.h"

namespace podsim::workloads {
namespace {

TEST(LossKernelTest, NamesRoundTripAndUnknownOnesAreNamed) {
  for (const std::string& name : LossKernelNames()) {
    sim::StatusOr<LossKernel> loss = LossKernelNamed(name);
    ASSERT_TRUE(loss.ok()) << name;
    EXPECT_EQ(LossKernelName(*loss), name);
  }
  EXPECT_EQ(LossKernelNamed("fused").status().message(),
            "unknown loss 'fused'; expected vocab-parallel, vocab-parallel-eager, "
            "vocab-parallel-te, upcast or compiled");
}

// Per logit in bf16: Megatron's fp32 softmax kept (4) and the bf16 logits beside it while cast
// (2); PyTorch's eager log-softmax output kept (4) and, in its backward, the NLL's and the
// log-softmax's fp32 gradients (8), or loss_parallel's three fp32 temporaries (12), with the
// bf16 logits' block the caching allocator keeps (2); the compiled loss keeps the bf16 logits
// (2) and writes a bf16 gradient (2).
TEST(LossKernelTest, BytesPerLogitFollowEachImplementation) {
  EXPECT_EQ(LossSavedBytesPerLogit(LossKernel::kVocabParallel, 2), 4);
  EXPECT_EQ(LossTransientBytesPerLogit(LossKernel::kVocabParallel, 2, 1), 2);
  EXPECT_EQ(LossTransientBytesPerLogit(LossKernel::kVocabParallel, 2, 8), 2);
  EXPECT_EQ(LossSavedBytesPerLogit(LossKernel::kUpcast, 2), 4);
  EXPECT_EQ(LossTransientBytesPerLogit(LossKernel::kUpcast, 2, 1), 10);
  EXPECT_EQ(LossTransientBytesPerLogit(LossKernel::kUpcast, 2, 8), 14);
  EXPECT_EQ(LossSavedBytesPerLogit(LossKernel::kCompiled, 2), 2);
  EXPECT_EQ(LossTransientBytesPerLogit(LossKernel::kCompiled, 2, 1), 2);
}

// The last stage's memory holds the loss's peak: Llama 3 8B with 16,384 tokens on a chip (2.1e9
// logits) holds 14 bytes a logit under the upcast loss, 6 under Megatron's and 4 compiled.
TEST(LossKernelTest, TheLastStageHoldsTheLossAtItsPeak) {
  const ModelSpec model = ParseModel("llama3-8b").value();
  const Layout layout = ParseLayout("fsdp=8").value();
  const topology::ChipSpec h100 = topology::ChipPreset("h100").value();
  const double logits = 2.0 * 8192 * 128256;
  auto total = [&](LossKernel loss) {
    OpOptions options;
    options.loss = loss;
    return StageMemory(model, layout, {16, 8192}, options, h100, 0).total_bytes;
  };
  EXPECT_DOUBLE_EQ(total(LossKernel::kUpcast) - total(LossKernel::kVocabParallel), 8 * logits);
  EXPECT_DOUBLE_EQ(total(LossKernel::kVocabParallel) - total(LossKernel::kCompiled), 2 * logits);
  // With tp, loss_parallel's backward: 14 bytes a logit of the chip's vocabulary shard beyond
  // the 4 it keeps.
  OpOptions upcast;
  upcast.loss = LossKernel::kUpcast;
  const Layout tp = ParseLayout("fsdp=2,tp=4,sp=1").value();
  const MemoryBreakdown m = StageMemory(model, tp, {4, 8192}, upcast, h100, 0);
  EXPECT_DOUBLE_EQ(m.loss_peak_bytes, 14 * 2.0 * 8192 * (128256 / 4));
}

// The upcast loss runs PyTorch's kernels whatever the other kernels are; eager kernels alone leave
// the loss one op.
TEST(LossKernelTest, UpcastLossKernelsExpandOnlyTheLoss) {
  const ModelSpec model = ParseModel("llama3-8b").value();
  const Layout layout = ParseLayout("fsdp=8").value();
  const ShardShape shape = ShapeOf(layout, model, {16, 8192});
  const OpOptions options;
  const OpList head = HeadForwardOps(model, layout, shape, options);
  const OpList upcast = LossKernels(head, 2, LossKernel::kUpcast);
  const OpList eager = EagerKernels(head, model, 2);
  auto count = [](const OpList& ops, const std::string& prefix) {
    int n = 0;
    for (const Op& op : ops) n += op.name.starts_with(prefix) ? 1 : 0;
    return n;
  };
  EXPECT_EQ(count(upcast, "head.loss."), 3);  // to_fp32, log_softmax, nll.
  EXPECT_EQ(count(upcast, "head.norm."), 0);
  EXPECT_EQ(count(eager, "head.loss."), 0);
  EXPECT_GT(count(eager, "head.norm."), 0);
}

// Megatron-LM's unfused loss (its default) runs PyTorch's kernels over the logits: six forward,
// 38 bytes a logit in bf16 (cast, max, subtraction, exp, sum, division), three backward, 14 bytes;
// the fused loss moves 6 each way. With tp its three all-reduces run one at a time, carrying
// together what the fused loss's two carry.
TEST(LossKernelTest, MegatronsUnfusedLossRunsItsEagerKernels) {
  const ModelSpec model = ParseModel("llama3-8b").value();
  const Layout layout = ParseLayout("tp=4,sp=1").value();
  const ShardShape shape = ShapeOf(layout, model, {4, 8192});
  OpOptions fused;
  OpOptions eager;
  eager.loss = LossKernel::kVocabParallelEager;
  auto bytes_of = [](const OpList& ops, std::string_view prefix, int* kernels) {
    double bytes = 0;
    *kernels = 0;
    for (const Op& op : ops) {
      if (op.kind != OpKind::kLoss || !op.name.starts_with(prefix)) continue;
      bytes += op.hbm_read_bytes + op.hbm_write_bytes;
      ++*kernels;
    }
    return bytes;
  };
  auto all_reduced = [](const OpList& ops, int* count) {
    double bytes = 0;
    *count = 0;
    for (const Op& op : ops) {
      if (!op.name.starts_with("tp.all-reduce.loss")) continue;
      bytes += op.comm_bytes;
      ++*count;
    }
    return bytes;
  };
  const double logits = shape.tokens * static_cast<double>(shape.vocab);
  for (const bool backward : {false, true}) {
    const OpList f = backward ? HeadBackwardOps(model, layout, shape, fused)
                              : HeadForwardOps(model, layout, shape, fused);
    const OpList e = LossKernels(backward ? HeadBackwardOps(model, layout, shape, eager)
                                          : HeadForwardOps(model, layout, shape, eager),
                                 2, LossKernel::kVocabParallelEager);
    const std::string prefix = backward ? "head.loss.dx" : "head.loss";
    int fused_kernels = 0, eager_kernels = 0;
    EXPECT_DOUBLE_EQ(bytes_of(f, prefix, &fused_kernels), 6 * logits) << backward;
    EXPECT_DOUBLE_EQ(bytes_of(e, prefix, &eager_kernels), (backward ? 14 : 38) * logits);
    EXPECT_EQ(fused_kernels, 1);
    EXPECT_EQ(eager_kernels, backward ? 3 : 6);
    if (backward) continue;
    int fused_all_reduces = 0, eager_all_reduces = 0;
    EXPECT_DOUBLE_EQ(all_reduced(f, &fused_all_reduces), all_reduced(e, &eager_all_reduces));
    EXPECT_EQ(fused_all_reduces, 2);  // The max, then the target logit and the sum together.
    EXPECT_EQ(eager_all_reduces, 3);
  }
  EXPECT_EQ(FrameworkOptions(Framework::kMegatron).loss, LossKernel::kVocabParallelEager);
}

// Transformer Engine's fused loss (Megatron-Bridge's): one kernel reads the bf16 logits twice and
// writes the gradient over them (6 bytes a logit forward), the backward scales it in place (4);
// it keeps the logits' 2 bytes and holds nothing beyond; with tp one all-gather of each rank's
// three values per token.
TEST(LossKernelTest, TransformerEnginesLossWritesTheGradientOverTheLogits) {
  EXPECT_EQ(LossSavedBytesPerLogit(LossKernel::kTransformerEngine, 2), 2);
  EXPECT_EQ(LossTransientBytesPerLogit(LossKernel::kTransformerEngine, 2, 8), 0);
  const ModelSpec model = ParseModel("llama3-8b").value();
  const Layout layout = ParseLayout("tp=4,sp=1").value();
  const ShardShape shape = ShapeOf(layout, model, {4, 8192});
  OpOptions te;
  te.loss = LossKernel::kTransformerEngine;
  const double logits = shape.tokens * static_cast<double>(shape.vocab);
  const OpList fwd = LossKernels(HeadForwardOps(model, layout, shape, te), 2, te.loss);
  const OpList bwd = LossKernels(HeadBackwardOps(model, layout, shape, te), 2, te.loss);
  int gathers = 0;
  for (const Op& op : fwd) {
    if (op.name == "head.loss") {
      EXPECT_DOUBLE_EQ(op.hbm_read_bytes + op.hbm_write_bytes, 6 * logits);
    }
    if (op.name.starts_with("tp.") && op.name.ends_with(".loss")) {
      ++gathers;
      EXPECT_EQ(op.collective, collectives::CollectiveOp::kAllGather);
      EXPECT_DOUBLE_EQ(op.comm_bytes, 3 * 4 * shape.tokens * 4.0);
    }
  }
  EXPECT_EQ(gathers, 1);
  for (const Op& op : bwd) {
    if (op.name == "head.loss.dx") {
      EXPECT_DOUBLE_EQ(op.hbm_read_bytes + op.hbm_write_bytes, 4 * logits);
    }
  }
}

}  // namespace
}  // namespace podsim::workloads
