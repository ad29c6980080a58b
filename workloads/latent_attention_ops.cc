#include "workloads/latent_attention_ops.h"

#include <string>

namespace podsim::workloads::layer_build {
namespace {

using collectives::CollectiveOp;

// Widths on one chip (latent_attention_ops.h header comment).
struct LatentDims {
  double q_lora = 0;   // 0: queries from the input.
  double q_in = 0;     // Input width of q's up projection: q_lora, or D.
  double kv_down = 0;  // kv_lora + rope_dim.
  double kv_lora = 0;
  double rope = 0;
  double gathered = 0;  // Width of what tp gathers (or reduces, backward) per token.
};

LatentDims LatentDimsOf(const ModelSpec& model) {
  LatentDims l;
  l.q_lora = D(model.q_lora);
  l.q_in = D(model.q_input_dim());
  l.kv_lora = D(model.kv_lora);
  l.rope = D(model.rope_dim);
  l.kv_down = l.kv_lora + l.rope;
  l.gathered = l.q_in + l.kv_down;
  return l;
}

}  // namespace

void AppendLatentProjections(Builder& b, const ModelSpec& model, const Dims& d, Phase phase,
                             int gather) {
  const LatentDims l = LatentDimsOf(model);
  const int input = b.last();
  std::vector<int> latents;
  if (l.q_lora > 0) {
    Op down = b.Matmul("attn.q_down", d.sp_tok, d.d, l.q_lora, d.e, phase);
    down.saved_bytes = d.e * d.sp_tok * d.d;  // The shared input, kept once.
    latents.push_back(b.Add(down, {gather}));
    b.set_last(input);
  }
  Op kv_down = b.Matmul("attn.kv_down", d.sp_tok, d.d, l.kv_down, d.e, phase);
  if (l.q_lora == 0) kv_down.saved_bytes = d.e * d.sp_tok * d.d;
  latents.push_back(b.Add(kv_down, {gather}));
  Op norm = b.Elementwise("attn.latent.norm", OpKind::kNorm, d.sp_tok * (l.q_lora + l.kv_lora),
                          kRmsNormFlops, 1, 1, d.e);
  norm.hbm_read_bytes += d.e * (l.q_lora + l.kv_lora);
  norm.saved_bytes = d.e * d.sp_tok * (l.q_lora + l.kv_lora);
  norm.deps = latents;
  if (l.q_lora == 0) norm.deps.push_back(input);
  b.Add(norm);
  if (d.sp) {
    b.Add(b.Collective("tp.all-gather.attn", CollectiveOp::kAllGather, "tp",
                       d.e * d.tok * l.gathered, /*blocking=*/true, phase));
  }
  const int gathered = b.last();
  Op q_up = b.Matmul("attn.q_up", d.tok, l.q_in, d.q, d.e, phase);
  q_up.saved_bytes = d.e * d.sp_tok * l.q_in;  // Its input, sharded again under sp.
  const int q = b.Add(q_up, {gather});
  b.set_last(gathered);
  Op kv_up = b.Matmul("attn.kv_up", d.tok, l.kv_lora, d.kv - d.heads * l.rope + d.v, d.e, phase);
  kv_up.saved_bytes = d.e * d.sp_tok * l.kv_lora;
  const int kv = b.Add(kv_up, {gather});
  Op rotary = b.Elementwise("attn.rotary", OpKind::kElementwise, d.tok * (d.heads + 1) * l.rope,
                            kRotaryFlops, 1, 1, d.e);
  rotary.deps = {q, kv};
  b.Add(rotary);
}

void AppendLatentProjectionsBackward(Builder& b, const OpList& fwd, const ModelSpec& model,
                                     const Dims& d, std::vector<int>* dws) {
  const LatentDims l = LatentDimsOf(model);
  b.Add(ElementwiseBackward(b, Find(fwd, "attn.rotary")));
  const int rotary = b.last();
  MatmulBackward(b, Find(fwd, "attn.kv_up"), d, dws);
  const int dkv = b.last();
  b.set_last(rotary);
  MatmulBackward(b, Find(fwd, "attn.q_up"), d, dws);
  const int dq = b.last();
  if (d.tp) {
    // Each tp rank's heads give a partial gradient of the whole latents.
    const CollectiveOp op = d.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
    Op reduce =
        b.Collective(std::string("tp.") + (d.sp ? "reduce-scatter" : "all-reduce") + ".attn.dx", op,
                     "tp", d.e * d.tok * l.gathered, /*blocking=*/true, Phase::kBackwardInput);
    reduce.deps = {dkv, dq};
    b.Add(reduce);
  }
  const int reduced = d.tp ? b.last() : -1;
  Op norm = ElementwiseBackward(b, Find(fwd, "attn.latent.norm"));
  norm.deps = reduced >= 0 ? std::vector<int>{reduced} : std::vector<int>{dkv, dq};
  b.Add(norm);
  const int dnorm = b.last();
  MatmulBackward(b, Find(fwd, "attn.kv_down"), d, dws);
  const int dx_kv = b.last();
  // The input's other gradient: through q's down projection, or (without q_lora) straight from
  // q's up projection.
  int dx_q = reduced >= 0 ? reduced : dq;
  if (l.q_lora > 0) {
    b.set_last(dnorm);
    MatmulBackward(b, Find(fwd, "attn.q_down"), d, dws);
    dx_q = b.last();
  }
  Op sum = b.Elementwise("attn.sum.dx", OpKind::kElementwise, d.sp_tok * d.d, kAddFlops, 2, 1, d.e);
  sum.phase = Phase::kBackwardInput;
  sum.deps = {dx_kv, dx_q};
  b.Add(sum);
}

}  // namespace podsim::workloads::layer_build
