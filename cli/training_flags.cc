#include "cli/training_flags.h"

#include <CLI/CLI.hpp>

#include "topology/names.h"
#include "workloads/eager_kernels.h"
#include "workloads/fp8_training.h"
#include "workloads/framework.h"
#include "workloads/loss_kernel.h"
#include "workloads/precision.h"

namespace podsim::cli {

void AddTrainingFlags(CLI::App* sub, TrainingFlags* flags, std::string_view tp_overlap_note) {
  sub->add_option("--framework", flags->framework,
                  "The framework whose semantics the step follows, and whose defaults --precision, "
                  "--kernels, --loss and --fp8-library take when not given: book (default; "
                  "podsim's own defaults and the book's tp traffic, a mix no framework runs), "
                  "megatron (Megatron-LM/Core with Transformer Engine: precision megatron; with sp "
                  "each column-parallel input gathered again for its weight gradient, and the "
                  "input gradient's reduce-scatter overlapping the weight gradients), torchtitan "
                  "(eager kernels, the upcast loss; the gathered input kept, and the "
                  "reduce-scatter after the weight gradients; refuses tp without sp, and tp or pp "
                  "without fsdp or cp, which torchtitan runs in fp32) or maxtext (XLA: the "
                  "gathered input kept and, by podsim's reading of XLA's scheduler, the "
                  "reduce-scatter overlapping the weight gradients); workloads/framework.h");
  sub->add_option("--precision", flags->precision,
                  "Bytes kept per parameter: mixed (default; bf16 params and grads, fp32 master "
                  "and Adam, 16 B, gradients accumulated in fp32 over microbatches and reduced in "
                  "fp32, as torchtitan's FSDP2 and MaxText do), zero (ZeRO's 16 B, "
                  "fp16 accumulation, gradients reduced in their own precision as DeepSpeed "
                  "does), megatron (fp32 main grads, 18 B; --framework megatron's), book (10 B, "
                  "bf16 gradients) or amp (PyTorch autocast: fp32 params and grads, each forward "
                  "casting the weights to 16 bits, each weight gradient cast to fp32 and added "
                  "into .grad; 18 B with the casts; workloads/precision.h)");
  sub->add_flag("--grad-reduce-in-bf16", flags->grad_reduce_in_bf16,
                "Gradients accumulated and reduced in bf16 (2 B) whatever --precision keeps "
                "(Megatron-LM's --grad-reduce-in-bf16, Megatron-Core's grad_reduce_in_fp32=False "
                "as Megatron-Bridge's performance recipes set it; torchtitan's "
                "mixed_precision_reduce=bfloat16); with --distributed-optimizer the optimizer "
                "step works on an fp32 copy of its gradient shard, made and dropped with it");
  sub->add_flag("--distributed-optimizer", flags->distributed_optimizer,
                "Megatron-LM's distributed optimizer: master weights and Adam moments sharded "
                "over dp (dp x cp with cp), gradients reduce-scattered over it in the last "
                "microbatch's backward, parameters all-gathered over it in the first "
                "microbatch's forward, overlapped as --overlap-grad-reduce and "
                "--overlap-param-gather say (default: gradients all-reduced, optimizer "
                "replicated)");
  sub->add_flag("--overlap-grad-reduce", flags->overlap_grad_reduce,
                "Data-parallel gradient reductions overlap the last microbatch's backward, each "
                "layer's issued once its gradients are done (Megatron-Core's "
                "--overlap-grad-reduce). --framework megatron's default is Megatron-Core's: "
                "every reduction after the backward, exposed; the other frameworks overlap "
                "always (PyTorch DDP, FSDP, XLA)");
  sub->add_flag("--overlap-param-gather", flags->overlap_param_gather,
                "With --distributed-optimizer: its parameter all-gathers overlap the next "
                "forward, a layer ahead (Megatron-Core's --overlap-param-gather). --framework "
                "megatron's default is Megatron-Core's: every gather after the optimizer step, "
                "exposed; the other frameworks overlap always");
  sub->add_flag("--tp-comm-overlap", flags->tp_comm_overlap,
                "Megatron-Core's tp communication overlap (Transformer Engine userbuffers): the "
                "layers' sequence-parallel all-gathers and reduce-scatters split into chunks that "
                "overlap their GEMMs; needs sp=1 with tp > 1" +
                    std::string(tp_overlap_note));
  sub->add_flag("--ep-comm-overlap", flags->ep_comm_overlap,
                "The expert all-to-alls of one microbatch hidden behind another's compute, as "
                "DualPipe's overlapped forward-backward chunks do (DeepSeek-V3; Megatron-Core's "
                "--overlap-moe-expert-parallel-comm without a pipeline): in the 1F1B steady state "
                "each backward runs merged with the next forward, their compute alternating at "
                "every ep all-to-all, with twice 1F1B's warm-up and the activations it holds; "
                "needs ep > 1 and schedule=1f1b without virtual stages");
  sub->add_flag("--fp8", flags->fp8,
                "Float8 training (torchtitan's float8 converter, torchao tensorwise scaling): the "
                "transformer layers' linear layers run at the chip's fp8 peak with its fp8 GEMM "
                "curve, their operands cast by kernels of their own; attention, the router and "
                "the output head stay bf16 (h100, h200, b200, gb200)");
  sub->add_option("--fp8-library", flags->fp8_library,
                  "With --fp8, what runs it: torchao (default; torchtitan's float8 converter, "
                  "which keeps the linear layers' high-precision inputs for the backward) or te "
                  "(Transformer Engine as Megatron-Core runs it: those inputs kept in fp8, the "
                  "weight gradient reading the casts before it, and without fsdp the weights cast "
                  "in each chunk's first forward of a step and kept in fp8 for the others, or "
                  "never cast with --fp8-all-gather; workloads/fp8_training.h; --framework "
                  "megatron's)");
  sub->add_option("--fp8-recipe", flags->fp8_recipe,
                  "With --fp8, the scaling: tensorwise (default; one scale a tensor, computed from "
                  "the tensor before its cast: torchao's tensorwise, Transformer Engine's current "
                  "scaling) or mxfp8 (one scale per 32 elements, 1 + 1/32 bytes an element; "
                  "Transformer Engine on b200 or gb200, without --fp8-all-gather: Megatron "
                  "gathers MXFP8 parameters in bf16)");
  sub->add_option("--kernels", flags->kernels,
                  "The non-GEMM kernels: fused (default; one kernel per norm, rotary and "
                  "activation, as Megatron-LM, Transformer Engine, torch.compile and Liger run "
                  "them) or eager (PyTorch eager as Hugging Face transformers' Llama code runs "
                  "them: RMSNorm through fp32 in 8 kernels, rotary in 5, SwiGLU in 2; --framework "
                  "torchtitan's; "
                  "workloads/eager_kernels.h). The loss's kernels and memory are --loss's "
                  "(Hugging Face transformers' eager loss: --loss upcast)");
  sub->add_option(
      "--loss", flags->loss,
      "The loss's cross-entropy, with bf16 logits: vocab-parallel (default; "
      "Megatron-LM's as one fused kernel each way: the fp32 softmax kept and overwritten by "
      "its gradient, 4 B a logit kept, 6 at its peak), vocab-parallel-eager (the same "
      "unfused, PyTorch's eager kernels, 6 forward and 3 backward, 52 B a logit moved "
      "against 12; --framework megatron's, Megatron-LM's default), vocab-parallel-te "
      "(Transformer Engine's fused kernel, Megatron-Bridge's: the gradient written over the "
      "bf16 logits, 2 B kept, nothing beyond), upcast (PyTorch's eager F.cross_entropy over "
      "logits.float(), as torchtitan before compiling it and Hugging Face "
      "transformers call it: 4 kept, 12 at its peak, 7 kernels; --framework "
      "torchtitan's) or compiled (the same under torch.compile: the bf16 logits kept, 4 "
      "at its peak); "
      "workloads/loss_kernel.h");
  sub->add_flag("--no-reshard-after-forward", flags->no_reshard_after_forward,
                "FSDP keeps each layer's gathered weights from its forward to its backward "
                "(FSDP2's reshard_after_forward=False, torchtitan's policy 'never'): the backward "
                "gathers nothing, and memory holds every layer's gathered weights at the turn "
                "from forward to backward (default: reshard, gather again in the backward)");
  sub->add_flag("--fp8-all-gather", flags->fp8_all_gather,
                "With --fp8 and fsdp or --distributed-optimizer: the layers' weights are "
                "all-gathered in fp8, half the bytes of bf16 (torchao's "
                "enable_fsdp_float8_all_gather, each chip casting its shard first; Megatron-Core's "
                "fp8_param_gather with current scaling; the weights kept still count the "
                "recipe's parameter bytes, as Transformer Engine's fp8 parameters carry a "
                "transposed copy)");
  sub->add_flag("--fp8-dispatch", flags->fp8_dispatch,
                "With --fp8 and ep: the expert dispatch all-to-all and the backward's combine "
                "carry fp8 tokens with one fp32 scale per 128 elements, as DeepSeek-V3 and "
                "DeepEP do (7,392 bytes a 7,168-wide token); the forward combine and the "
                "backward's dispatch stay bf16");
}

sim::StatusOr<size_t> ChooseFlagValue(std::string_view flag, const std::string& text,
                                      const std::vector<std::string_view>& names) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == text) return i;
  }
  std::string known;
  for (std::string_view name : names) known += (known.empty() ? "" : ", ") + std::string(name);
  return sim::Status::InvalidArgument(std::string(flag) + ": unknown value '" + text + "'" +
                                      topology::DidYouMean(text, names) + "; expected " + known);
}

sim::Status CheckTrainingFlags(const TrainingFlags& flags) {
  auto check = [](std::string_view flag, const std::string& value,
                  const std::vector<std::string>& names) {
    if (value.empty()) return sim::Status::Ok();
    return ChooseFlagValue(flag, value, std::vector<std::string_view>(names.begin(), names.end()))
        .status();
  };
  PODSIM_RETURN_IF_ERROR(check("--framework", flags.framework, workloads::FrameworkNames()));
  PODSIM_RETURN_IF_ERROR(check("--precision", flags.precision, workloads::PrecisionRecipeNames()));
  PODSIM_RETURN_IF_ERROR(check("--kernels", flags.kernels, workloads::KernelLibraryNames()));
  PODSIM_RETURN_IF_ERROR(check("--fp8-library", flags.fp8_library, workloads::Fp8LibraryNames()));
  PODSIM_RETURN_IF_ERROR(check("--fp8-recipe", flags.fp8_recipe, workloads::Fp8RecipeNames()));
  return check("--loss", flags.loss, workloads::LossKernelNames());
}

void AddTrainingFlagSources(std::string_view prefix, scenario::SourceMap* sources) {
  const std::string p(prefix);
  sources->AddFlag(p + ".precision", "--precision");
  sources->AddFlag(p + ".distributed_optimizer", "--distributed-optimizer");
  sources->AddFlag(p + ".overlap_grad_reduce", "--overlap-grad-reduce");
  sources->AddFlag(p + ".overlap_param_gather", "--overlap-param-gather");
  sources->AddFlag(p + ".tp_comm_overlap", "--tp-comm-overlap");
  sources->AddFlag(p + ".ep_comm_overlap", "--ep-comm-overlap");
  sources->AddFlag(p + ".fp8", "--fp8");
  sources->AddFlag(p + ".kernels", "--kernels");
  sources->AddFlag(p + ".no_reshard_after_forward", "--no-reshard-after-forward");
  sources->AddFlag(p + ".fp8_all_gather", "--fp8-all-gather");
  sources->AddFlag(p + ".fp8_dispatch", "--fp8-dispatch");
  sources->AddFlag(p + ".loss", "--loss");
  sources->AddFlag(p + ".grad_reduce_in_bf16", "--grad-reduce-in-bf16");
  sources->AddFlag(p + ".fp8_library", "--fp8-library");
  sources->AddFlag(p + ".fp8_recipe", "--fp8-recipe");
  sources->AddFlag(p + ".framework", "--framework");
}

}  // namespace podsim::cli
