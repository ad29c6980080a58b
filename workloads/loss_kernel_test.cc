#include "workloads/loss_kernel.h"

#include <gtest/gtest.h>

#include <string>

#include "topology/chip_spec.h"
#include "workloads/eager_kernels.h"
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
            "unknown loss 'fused'; expected vocab-parallel, upcast or compiled");
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
}

// The upcast loss runs PyTorch's kernels whatever the other kernels are; eager kernels alone leave
// the loss one op.
TEST(LossKernelTest, UpcastLossKernelsExpandOnlyTheLoss) {
  const ModelSpec model = ParseModel("llama3-8b").value();
  const Layout layout = ParseLayout("fsdp=8").value();
  const ShardShape shape = ShapeOf(layout, model, {16, 8192});
  const OpOptions options;
  const OpList head = HeadForwardOps(model, layout, shape, options);
  const OpList upcast = UpcastLossKernels(head, 2);
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

}  // namespace
}  // namespace podsim::workloads
