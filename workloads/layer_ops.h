// The ops of one training step, piece by piece, on one chip: a transformer layer's forward and
// backward, the embedding, the head (final norm, unembedding, loss) and the optimizer step, with
// the collectives each needs under a layout (op.h).
//
// Sharding (layout.h): dp and fsdp split the batch; tp splits heads, kv heads, ffn and the
// vocabulary (Megatron: column-parallel QKV / gate / up, row-parallel O / down, vocab-parallel
// embedding and loss); sp runs norms, dropout and residuals on T/tp tokens; pp splits layers.
// Collectives, per layer (V = bytes of the whole array, bf16 activations):
//   tp, no sp:  all-reduce of [tokens, D] after O and after down (forward) and after the QKV and
//               gate/up input-gradients (backward) -- Megatron's f/g operators; blocking.
//   tp, sp:     all-gather [tokens, D] before QKV and gate/up, reduce-scatter after O and down;
//               transposed in the backward pass (formulas.md 2.2 duality); blocking. Under
//               --framework megatron also an all-gather of the QKV and gate/up inputs again for
//               their weight gradients, not blocking (framework.h).
//   fsdp:       all-gather of the layer's weights before its forward and again before its
//               backward (ZeRO-3 frees them in between); reduce-scatter of its gradients after
//               the weight-gradient ops. Non-blocking (prefetchable / overlappable).
//   dp:         all-reduce of the layer's gradients (1/fsdp of them when fsdp > 1). Non-blocking.
// Data dependencies: `deps` name producers within the same list; a compute op with no compute
// producer consumes the list's input (the previous piece's output).
//
// Attention. kFlash (default; Dao et al. 2022), one fused kernel: never writes the T x T scores;
// kFlash2 and kCudnn are the same ops timed on another kernel's curve (the enum below);
// a causal kernel skips masked tiles, so it computes the T(T+1)/2 unmasked query-key pairs per
// sequence (counted exactly, ignoring the partial tiles on the diagonal); its backward recomputes
// the scores (5 matmul-sized passes instead of 4). kMaterialized (Megatron 2022, the baseline of
// Korthikanti et al.): Megatron-LM's separate kernels attn.core.scores (batched QK^T), .softmax,
// .dropout and attn.core (batched PV), and their backward kernels, computing all T^2 pairs and
// keeping the softmax probabilities (and dropout mask and output).
//
// Recomputation (Korthikanti et al. 2022):
//   kNone       keep every activation the backward pass reads.
//   kSelective  recompute the attention core: with kMaterialized, its ops again (QK^T, softmax,
//               dropout and PV; book X10: 4BT^2NH extra FLOPs) and no T^2 activations;
//               with kFlash the kernel already does this, so nothing changes.
//   kFull       keep only each layer's input; re-run its whole forward (collectives included)
//               before its backward.
//   kSaveNamed  keep only the outputs of `saved_ops` (JAX's save_only_these_names, PyTorch's
//               selective checkpoint policies); re-run the forward ops whose outputs are not kept
//               (an upper bound on what XLA recomputes). The name kSavedInput stands for the
//               layer's input, which PyTorch's checkpoint and JAX's scan keep to re-run the
//               forward from and the book's accounting leaves out (its checkpoints are op
//               outputs only: book TR13, AT5).
// model_flops counts forward and backward once, attention by `model_flops_count`; recomputed work
// and the flash backward's extra pass are hardware FLOPs only (HFU vs MFU).
//
// Elementwise FLOPs per element, counted from each op's definition (they are HBM-bound anyway):
// RMSNorm 4 (square, sum, scale by rsqrt, gain), LayerNorm 7, residual add 1, dropout 2, rotary 3,
// SiLU-gate 5 (exp, add, divide, multiply, gate), GeLU 8 (tanh form), softmax 5 (max, subtract,
// exp, sum, divide), Adam 14 per parameter (Kingma & Ba 2015 Alg. 1 with AdamW decay).

#ifndef PODSIM_WORKLOADS_LAYER_OPS_H_
#define PODSIM_WORKLOADS_LAYER_OPS_H_

#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "workloads/compute_model.h"
#include "workloads/eager_kernels.h"
#include "workloads/fp8_training.h"
#include "workloads/framework.h"
#include "workloads/layout.h"
#include "workloads/loss_kernel.h"
#include "workloads/model_spec.h"
#include "workloads/op.h"
#include "workloads/precision.h"
#include "workloads/recompute_layers.h"

namespace podsim::workloads {

enum class RecomputePolicy { kNone, kSelective, kFull, kSaveNamed };
// The saved-op name of a layer's input (RecomputePolicy::kSaveNamed).
inline constexpr std::string_view kSavedInput = "input";
// A layer's MLP: dense, or a mixture of experts (model_spec.h; moe_ops.h has its ops).
enum class MlpKind { kDense, kMoe };
// kFlash: the chip family's calibrated flash kernel (FA3 on Hopper, FA4 on Blackwell); kFlash2
// and kCudnn: FlashAttention-2 (PyTorch SDPA's flash backend) and cuDNN's fused attention
// (Transformer Engine's FusedAttention, SDPA's cuDNN backend), each a flash kernel with its own
// fitted curve (compute_model.h; Hopper only); kMaterialized: separate kernels (header comment).
enum class AttentionKernel { kFlash, kMaterialized, kFlash2, kCudnn };
// "" for kFlash and kMaterialized, "fa2", "cudnn": the name an op's kernel carries.
std::string_view AttentionKernelName(AttentionKernel kernel);

struct OpOptions {
  // The framework whose backward order, re-gathers and kept inputs the layers follow
  // (framework.h); FrameworkOptions() gives its defaults to the options below.
  Framework framework = Framework::kBook;
  RecomputePolicy recompute = RecomputePolicy::kNone;
  std::vector<std::string> saved_ops;  // kSaveNamed: names of forward ops whose outputs are kept.
  // kSaveNamed: forward ops whose outputs are kept in host memory instead (MaxText's offloaded
  // remat policies, remat_policy.h): not recomputed, and no HBM. The copies over the chip's host
  // link are not simulated (assumed hidden behind compute, as XLA schedules them; the output
  // says so and gives their bytes).
  std::vector<std::string> offloaded_ops;
  // The layers that run `recompute`; the others keep everything (recompute_layers.h).
  RecomputeLayers recompute_layers;
  AttentionKernel attention = AttentionKernel::kFlash;
  bool causal = true;  // Decoder masking; kFlash skips the masked pairs.
  // kCausal (default): the pairs a causal kernel executes, so MFU <= HFU; kFull: all T^2 pairs,
  // the PaLM / Megatron / book convention (MFU can then exceed the executed work).
  AttentionCount model_flops_count = AttentionCount::kCausal;
  PrecisionRecipe precision = PrecisionRecipe::Mixed();  // precision.h
  // Megatron-LM's distributed optimizer (--use-distributed-optimizer, ZeRO-1 over dp): the master
  // weights and Adam moments are sharded over dp; the last microbatch's backward reduce-scatters
  // each layer's gradients over dp (in the gradient precision) instead of all-reducing them; each
  // rank updates its shard, and the parameters are all-gathered over dp (in the working precision)
  // during the next step's first forward, a layer ahead of its use (megatron/core/distributed/
  // param_and_grad_buffer.py, docs/distrib_optimizer.md), each of these as overlap_grad_reduce
  // and overlap_param_gather below say. One step is simulated in steady state, so that gather
  // opens this step's first microbatch. With dp = 1 it changes nothing.
  bool distributed_optimizer = false;
  // Data-parallel gradient reductions (dp's all-reduces, or the distributed optimizer's
  // reduce-scatters) overlapping the last microbatch's backward, each layer's issued once its
  // gradients are done (PyTorch DDP's buckets; Megatron-Core's --overlap-grad-reduce). False:
  // Megatron-Core's default (DistributedDataParallelConfig.overlap_grad_reduce), every reduction
  // issued after the stage's last backward, in finalize_model_grads, one bucket a model chunk,
  // and exposed (training_schedule.h). FrameworkOptions sets it; WithLayoutDefaults turns it on
  // with fsdp.
  bool overlap_grad_reduce = true;
  // The distributed optimizer's parameter all-gathers over dp overlapping the next step's first
  // forward, a layer ahead of its use (Megatron-Core's --overlap-param-gather). False:
  // Megatron-Core's default, every gather issued at the end of the optimizer step, one bucket a
  // model chunk, and waited for before the next forward (training_schedule.h). Without the
  // distributed optimizer it changes nothing. FrameworkOptions sets it; WithLayoutDefaults turns
  // it on with fsdp.
  bool overlap_param_gather = true;
  // Megatron-Core's --tp-comm-overlap (Transformer Engine userbuffers): the sequence-parallel tp
  // all-gathers and reduce-scatters of the layers overlap their GEMMs (tp_comm_overlap.h).
  // REQUIRES (with tp > 1): sequence parallelism, as Megatron-LM requires.
  bool tp_comm_overlap = false;
  // Expert all-to-alls hidden behind another microbatch's compute, as DualPipe's overlapped
  // forward-backward chunks do (DeepSeek-V3 report, section 3.2.1): in the 1F1B steady state each
  // backward runs merged with the forward after it, their compute alternating at every ep
  // all-to-all, with twice 1F1B's warm-up (training_schedule.h). Without a pipeline this is
  // Megatron-Core's --overlap-moe-expert-parallel-comm (its combined 1F1B without pipelining);
  // with pp > 1 Megatron-Core needs virtual stages for it, which podsim does not model here.
  // REQUIRES: ep > 1 and the 1F1B schedule without virtual stages (ValidateEpCommOverlap).
  bool ep_comm_overlap = false;
  // Float8 training of the transformer layers' linear layers (fp8_training.h). REQUIRES: a chip
  // with an fp8 peak (training.h checks it).
  bool fp8 = false;
  // With fp8: the library that runs it, which decides what the backward keeps (fp8_training.h).
  Fp8Library fp8_library = Fp8Library::kTorchao;
  // With fp8: the scaling recipe, which decides an element's bytes (fp8_training.h). kMxfp8
  // REQUIRES: Transformer Engine, a chip with block-scaled fp8 and no fp8_all_gather
  // (ValidateFp8Recipe).
  Fp8Recipe fp8_recipe = Fp8Recipe::kTensorwise;
  // The non-GEMM kernels: fused (one kernel an op) or PyTorch eager as Hugging Face transformers
  // runs them (eager_kernels.h).
  KernelLibrary kernels = KernelLibrary::kFused;
  // The loss's implementation: its kernels and the memory it holds (loss_kernel.h).
  LossKernel loss = LossKernel::kVocabParallel;
  // FSDP's reshard after forward (PyTorch FSDP2's reshard_after_forward, default true: ZeRO-3):
  // each layer's weights are gathered over fsdp for its forward and again for its backward. False
  // (torchtitan's reshard_after_forward_policy "never"): the forward's gathered weights stay until
  // the layer's backward, which gathers nothing; memory holds every layer's gathered weights at
  // the turn from forward to backward (memory.h). Without fsdp it changes nothing.
  bool fsdp_reshard_after_forward = true;
  // FSDP as torch.distributed.pipelining runs FSDP2 (false: ZeRO-3's way, reduce-scatters after
  // every microbatch's weight gradients): its stages run every backward with gradient sync and
  // resharding off and, after a stage's last backward of the step, FSDP2's post_backward for the
  // whole stage (stage.py, backward_maybe_with_nosync, since pytorch/pytorch#134052, September
  // 2024). So each layer's weights are gathered in the first microbatch's forward and kept all
  // step, each chip accumulates its stage's unsharded gradients, upcast to FSDP2's reduce dtype,
  // fp32 (FSDPParam.to_accumulated_grad_if_needed; memory.h), and the reduce-scatters start
  // after the last microbatch's backward (training_schedule.h). No flag: WithLayoutDefaults sets
  // it for a framework that runs so.
  bool fsdp_sync_last_microbatch = false;
  // With fp8 and fsdp: the layers' weights all-gathered over fsdp in fp8 (torchao's
  // enable_fsdp_float8_all_gather with precompute_float8_dynamic_scale_for_fsdp): each chip casts
  // its own shard before the gather, so a layer's gathers move one byte a parameter (its norm and
  // router weights too, under 0.1% of a layer's) and its forward casts a shard, not the whole
  // weights (fp8_training.h); the gathered buffers hold fp8 (memory.h). With the distributed
  // optimizer, its parameter all-gathers over dp move one byte a parameter likewise
  // (Megatron-Core's fp8_param_gather with fp8 current scaling; MXFP8 parameters are gathered in
  // bf16). The weights a chip keeps are counted at the recipe's
  // parameter bytes: Transformer Engine's fp8 parameters carry a transposed copy on Hopper, about
  // 2 B a parameter (not modelled apart; MXFP8 parameters are refused, ValidateFp8Recipe). torchao
  // casts a shard in each forward; Transformer Engine none, its optimizer step writing the
  // parameters in fp8 (fp8_training.h). REQUIRES: fp8 (ValidateFp8), and fsdp > 1 or the
  // distributed optimizer over dp > 1 (scenario_check.cc).
  bool fp8_all_gather = false;
  // With fp8 and ep: the expert dispatch all-to-all and the backward's combine.dx (the output
  // gradients on their way to the experts) carry fp8 with one fp32 scale per 128 elements, as
  // DeepSeek-V3 trains (report section 3.3.2: the activations before the experts' up-projections
  // and the gradients before their down-projections in fp8; the "forward and backward combine
  // components", podsim's combine and dispatch.dx, in bf16) and DeepEP sends them
  // (kFp8DispatchBytesPerElement). The etp all-gather after the dispatch stays in bf16. The casts
  // stay where fp8_training.h puts them, before the expert GEMMs: the same rows either side of
  // the all-to-all when routing is balanced. REQUIRES: fp8 and ep > 1 (ValidateFp8,
  // ValidateOpOptions).
  bool fp8_dispatch = false;
};

// OpOptions{} for `framework`: the framework and its defaults (framework.h DefaultsOf).
OpOptions FrameworkOptions(Framework framework);

// `options` with what its framework does under `layout` beyond its fixed defaults: torchtitan
// with pp > 1 and fsdp does not reshard after the forward (torchtitan 9dec370,
// torchtitan/parallelisms/parallelize_llama.py, apply_fsdp: "if pp_enabled: reshard_after_forward
// = False") and runs FSDP2 under torch.distributed.pipelining, which gathers the weights once a
// step and reduces fsdp's gradients after the last microbatch's backward only
// (fsdp_sync_last_microbatch). With fsdp under any framework, the dp reductions and gathers
// overlap (overlap_grad_reduce and overlap_param_gather true): podsim's fsdp overlaps its own, and
// an fsdp layout's dp reductions wait for them. Idempotent; the schedule and the memory apply it
// (training_schedule.h, memory.h).
OpOptions WithLayoutDefaults(const OpOptions& options, const Layout& layout);

// DeepEP's fp8 token: 7,168 bytes of hidden state and 56 fp32 scales, 7,392 bytes (DeepEP
// README's fp8 dispatch, docs/reference/calibration.md G5.3; the G5.3 rows of docs/validation.md
// send it), 1 + 4/128 bytes an element.
inline constexpr double kFp8DispatchBytesPerElement = 1.0 + 4.0 / 128;

// Checks `options` against `layout`: --tp-comm-overlap needs sequence parallelism when tp > 1
// (Megatron-LM: "Tensor parallel communication/GEMM overlap can happen only when sequence
// parallelism is enabled"), --ep-comm-overlap expert parallelism and the 1F1B schedule.
// InvalidArgument naming the option otherwise.
sim::Status ValidateOpOptions(const OpOptions& options, const Layout& layout);
// The part of ValidateOpOptions about the precision recipe: amp (PyTorch autocast) without fsdp,
// pp, fp8 or bf16 gradients, which it does not model.
sim::Status ValidatePrecision(const OpOptions& options, const Layout& layout);
// The part of ValidateOpOptions about options.attention: cp > 1 needs flash attention.
sim::Status ValidateAttentionOption(const OpOptions& options, const Layout& layout);
// InvalidArgument when options.attention names a kernel `efficiency` has no curve for.
sim::Status ValidateAttentionKernel(const OpOptions& options, const ComputeEfficiency& efficiency);
// The part about options.tp_comm_overlap (the sp requirement above).
sim::Status ValidateTpCommOverlap(const OpOptions& options, const Layout& layout);
// The part about options.ep_comm_overlap: ep > 1, the 1F1B schedule, no virtual stages.
sim::Status ValidateEpCommOverlap(const OpOptions& options, const Layout& layout);
// InvalidArgument where the framework does not run the layout as podsim would simulate it:
// torchtitan's tensor parallelism without sequence parallelism, or its tp or pp without fsdp or
// cp (which it runs in fp32; framework.h).
sim::Status ValidateFrameworkLayout(const OpOptions& options, const Layout& layout);

// One transformer layer on one chip, for one microbatch (REQUIRES: ValidateLayout ok and `shape`
// = ShapeOf(layout, model, batch); kMoe only for a model with experts). Forward op names:
// attn.norm, attn.qkv, attn.rotary, attn.core, attn.out, attn.dropout, attn.residual, mlp.norm,
// mlp.gate, mlp.up, mlp.act, mlp.down (kMoe: the moe.* ops of moe_ops.h instead), mlp.dropout,
// mlp.residual; collectives tp.*, fsdp.*, dp.* (kMoe also ep.*, etp.*, expert-fsdp.*,
// expert-dp.*: the group names of Layout::GroupAxes).
OpList LayerForwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                       const OpOptions& options, MlpKind mlp = MlpKind::kDense);
// Recomputation (per options.recompute), then the input- and weight-gradient ops in reverse
// order ("<forward name>.dx" / ".dw"), with the tp collectives and the gradient reductions (of
// kMoe layers: the dense parameters' over fsdp and dp, the routed experts' over expert-fsdp and
// expert-dp).
OpList LayerBackwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                        const OpOptions& options, MlpKind mlp = MlpKind::kDense);

// First pipeline stage: token (and position) embedding; last stage: final norm, unembedding and
// the cross-entropy loss.
OpList EmbeddingForwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                           const OpOptions& options);
OpList EmbeddingBackwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                            const OpOptions& options);
OpList HeadForwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                      const OpOptions& options);
OpList HeadBackwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                       const OpOptions& options);

// The Adam step over `params_on_chip` parameters (memory.h ParamsPerChip): reads the working
// parameters, gradients (the buffer `layout`'s microbatches hold), master copy and moments;
// writes all but the gradients.
// `expert_params` of them are routed experts' (memory.h ParamsPerChip).
OpList OptimizerOps(double params_on_chip, const Layout& layout, const OpOptions& options,
                    double expert_params = 0);

// Activation bytes one layer keeps for one microbatch between its forward and backward on one
// chip, under options.recompute (computed from `forward` = LayerForwardOps(...)).
double LayerActivationBytes(const OpList& forward, const OpOptions& options);
// The bytes of the outputs one layer offloads to host memory for one microbatch
// (OpOptions::offloaded_ops; 0 unless kSaveNamed).
double LayerOffloadedBytes(const OpList& forward, const OpOptions& options);

// Under fp8 with Transformer Engine: whether each cast writes a column-wise copy besides the
// row-wise one (fp8_training.h): where `chip`'s fp8 GEMMs take only the TN layout, and under
// MXFP8.
bool Fp8ColumnwiseCopies(const OpOptions& options, const topology::ChipSpec& chip);

// Under fp8 with Transformer Engine: whether it casts the weights in a chunk's first forward of
// the step and keeps them (fp8_training.h): with bf16 parameters that stay whole on the chip (no
// fsdp over dense or expert weights).
bool Fp8WeightCache(const OpOptions& options, const Layout& layout);

// Parameters of one layer held by one chip before fsdp sharding: matmul weights and biases / tp,
// norm gains replicated. Of an MoE layer, the dense part: attention and shared experts / tp, the
// router and norms replicated (the routed experts are ExpertParamsPerChip).
double LayerParamsPerTpShard(const ModelSpec& model, const Layout& layout,
                             MlpKind mlp = MlpKind::kDense);
// The routed experts of one MoE layer held by one chip before expert-fsdp sharding: experts/ep
// experts, each split over etp.
double ExpertParamsPerChip(const ModelSpec& model, const Layout& layout);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_LAYER_OPS_H_
