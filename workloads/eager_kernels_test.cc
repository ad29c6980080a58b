#include "workloads/eager_kernels.h"

#include <gtest/gtest.h>

#include <string>

#include "workloads/layer_ops.h"
#include "workloads/layout.h"

namespace podsim::workloads {
namespace {

ModelSpec Llama8b() {
  sim::StatusOr<ModelSpec> model = ParseModel("llama3-8b");
  EXPECT_TRUE(model.ok());
  return *model;
}

const Op* Named(const OpList& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

double Bytes(const OpList& ops, const std::string& prefix) {
  double bytes = 0;
  for (const Op& op : ops) {
    if (op.name.starts_with(prefix)) bytes += op.hbm_read_bytes + op.hbm_write_bytes;
  }
  return bytes;
}

OpList Forward(const ModelSpec& model, const OpOptions& options = {}) {
  const Layout layout = ParseLayout("dp=8").value();
  const BatchSpec batch{8, 8192};
  return LayerForwardOps(model, layout, ShapeOf(layout, model, batch), options);
}

OpList Backward(const ModelSpec& model, const OpOptions& options = {}) {
  const Layout layout = ParseLayout("dp=8").value();
  const BatchSpec batch{8, 8192};
  return LayerBackwardOps(model, layout, ShapeOf(layout, model, batch), options);
}

// HF's LlamaRMSNorm in bf16 moves 36 bytes an element (fp32 cast, pow, mean, scale, cast back,
// weight) in 8 kernels, where the fused kernel moves the 4 of one read and one write.
TEST(EagerKernelsTest, RmsNormRunsThroughFp32InEightKernels) {
  const ModelSpec model = Llama8b();
  const OpList fused = Forward(model);
  const OpList eager = EagerKernels(fused, model, 2);
  const double elements = 8192.0 * 4096;
  EXPECT_EQ(Named(eager, "attn.norm"), nullptr);
  int kernels = 0;
  for (const Op& op : eager) kernels += op.name.starts_with("attn.norm.") ? 1 : 0;
  EXPECT_EQ(kernels, 8);
  EXPECT_DOUBLE_EQ(Bytes(eager, "attn.norm."), 36 * elements);
  EXPECT_NEAR(Bytes(fused, "attn.norm"), 4 * elements, 4 * 4096 + 1);  // + the weight.
  // SwiGLU: SiLU (4 bytes) and the product (6) over the gate's elements.
  EXPECT_DOUBLE_EQ(Bytes(eager, "mlp.act."), 10 * 8192.0 * 14336);
  // The rest is untouched: the matmuls, attention, the residual adds.
  EXPECT_NE(Named(eager, "mlp.residual"), nullptr);
  EXPECT_EQ(Named(eager, "attn.qkv")->flops, Named(fused, "attn.qkv")->flops);
}

// Dependencies follow the chains: the op after a chain waits for its last kernel, the chain's
// first kernel for what the op waited for, and the last kernel keeps the op's saved bytes.
TEST(EagerKernelsTest, ChainsKeepTheDependenciesAndSavedBytes) {
  const ModelSpec model = Llama8b();
  const OpList fused = Forward(model);
  const OpList eager = EagerKernels(fused, model, 2);
  for (size_t i = 0; i < eager.size(); ++i) {
    for (int dep : eager[i].deps) {
      ASSERT_GE(dep, 0);
      EXPECT_LT(static_cast<size_t>(dep), i) << eager[i].name;
    }
  }
  double saved_fused = 0, saved_eager = 0;
  for (const Op& op : fused) saved_fused += op.saved_bytes;
  for (const Op& op : eager) saved_eager += op.saved_bytes;
  EXPECT_DOUBLE_EQ(saved_eager, saved_fused);
  const Op* weight = Named(eager, "attn.norm.weight");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->saved_bytes, Named(fused, "attn.norm")->saved_bytes);
  const Op* qkv = Named(eager, "attn.qkv");
  const int weight_index = static_cast<int>(weight - eager.data());
  EXPECT_NE(std::find(qkv->deps.begin(), qkv->deps.end(), weight_index), qkv->deps.end());
}

// Backward and recomputed ops get their chains too; LayerNorm and GeLU are one kernel either way.
TEST(EagerKernelsTest, BackwardRecomputeAndNativeKernels) {
  const ModelSpec model = Llama8b();
  OpOptions full;
  full.recompute = RecomputePolicy::kFull;
  const OpList eager = EagerKernels(Backward(model, full), model, 2);
  EXPECT_NE(Named(eager, "attn.norm.recompute.to_fp32"), nullptr);
  EXPECT_NE(Named(eager, "attn.norm.dx.to_fp32.dx"), nullptr);
  EXPECT_NE(Named(eager, "attn.rotary.dx.half.slice.dx"), nullptr);
  EXPECT_NE(Named(eager, "mlp.act.dx.silu.dx"), nullptr);
  int backward_norm_kernels = 0;
  for (const Op& op : eager) backward_norm_kernels += op.name.starts_with("attn.norm.dx.") ? 1 : 0;
  EXPECT_EQ(backward_norm_kernels, 16);
  EXPECT_DOUBLE_EQ(Bytes(eager, "attn.norm.dx."), 92 * 8192.0 * 4096);

  // An op whose output is kept (--recompute save:...) is not recomputed, eager or not.
  OpOptions keep_norm;
  keep_norm.recompute = RecomputePolicy::kSaveNamed;
  keep_norm.saved_ops = {"attn.norm"};
  const OpList kept = EagerKernels(Backward(model, keep_norm), model, 2);
  EXPECT_NE(Named(kept, "attn.norm.recompute"), nullptr);
  EXPECT_EQ(Named(kept, "attn.norm.recompute.to_fp32"), nullptr);
  EXPECT_DOUBLE_EQ(Bytes(kept, "attn.norm.recompute"), 0);

  ModelSpec gpt = model;
  gpt.norm = NormKind::kLayer;
  gpt.gated_mlp = false;
  gpt.learned_positions = 2048;
  const OpList fused = Forward(gpt);
  EXPECT_EQ(EagerKernels(fused, gpt, 2).size(), fused.size());
}

TEST(EagerKernelsTest, LibraryNames) {
  EXPECT_EQ(KernelLibraryNamed("eager").value(), KernelLibrary::kEager);
  EXPECT_EQ(KernelLibraryName(KernelLibrary::kFused), "fused");
  EXPECT_EQ(KernelLibraryNamed("compiled").status().message(),
            "unknown kernels 'compiled'; expected fused or eager");
}

}  // namespace
}  // namespace podsim::workloads
