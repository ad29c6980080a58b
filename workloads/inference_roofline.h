// InferenceRoofline: the book's closed form of an inference step, with podsim's own counts, and
// how far the simulated step departs from it, cause by cause.
//
// The closed form (formulas.md 2.6, the book's Ch7), per replica: over the n = tp x tp2 chips of
// one replica,
//   step = B x KV / (n W) + max(ParamBytes / (n W), 2 x tokens x MatmulParams / (n C)),
// B the replica's sequences (batch / dp), tokens its rows through the matmuls (B, or B x prompt
// in a prefill), KV the cache one sequence reads (decode: every cached position; a prefill reads
// no cache), W the chip's HBM bandwidth and C its bf16 peak (fp8 with fp8 weights, DType), each
// at its full rate, and no
// communication. ParamBytes is every parameter at the weights' dtype, over the chips that hold
// the model's experts once: n, or n x ep/tp when expert parallelism spans replicas.
//
// The simulated step is longer by four parts, which add up to the difference:
//   chip counts    this chip's own closed form (its weights and cache as inference_memory.h
//                  counts them, its matmuls' FLOPs) minus the even share above: kv heads or MLA
//                  latents replicated when tp exceeds them, padded vocabularies, logits of each
//                  sequence's last token only (a prefill), dense weights held by every replica of
//                  an ep group;
//   other work     the compute stream with every op at its own roofline at full rates
//                  (compute_model.h's IdealRoofline) minus this chip's closed form: the HBM
//                  traffic of activations, norms and residual adds, the attention scores' FLOPs
//                  (a prefill's grow with the prompt), ops not all bound alike; negative where a
//                  step reads less than the chip holds (the experts no token is routed to, the
//                  embedding table of which it reads a row a token);
//   efficiency     the simulated compute stream (the chip family's efficiencies: HBM below its
//                  bandwidth, matmuls below the peak, per-kernel overheads) minus the same at
//                  full rates;
//   communication  the rest of the step: exposed collectives, compute slowed by concurrent
//                  communication (interference) and idle time.
// The four always sum to step - closed form.

#ifndef PODSIM_WORKLOADS_INFERENCE_ROOFLINE_H_
#define PODSIM_WORKLOADS_INFERENCE_ROOFLINE_H_

#include "schedule.pb.h"
#include "topology/chip_spec.h"
#include "workloads/inference_memory.h"
#include "workloads/inference_ops.h"
#include "workloads/model_spec.h"

namespace podsim::workloads {

struct InferenceRoofline {
  int64_t chips = 0;         // n: the chips of one replica.
  int64_t weight_chips = 0;  // The chips ParamBytes spreads over: n, or n x ep/tp.
  int64_t sequences = 0;     // B: the replica's sequences.
  double cache_s = 0;        // B x KV / (n W).
  double weights_s = 0;      // ParamBytes / (n W).
  double flops_s = 0;        // 2 x tokens x MatmulParams / (n C).
  double step_s = 0;         // cache_s + max(weights_s, flops_s).
  // Where the simulated step exceeds step_s (header comment).
  double chip_counts_s = 0;
  double other_work_s = 0;
  double efficiency_s = 0;
  double communication_s = 0;
};

// REQUIRES: ValidateInferenceLayout(layout, model, ..., options) ok; `program` the step's one
// program (InferenceSchedule), `memory` InferenceMemory(model, layout, options, chip);
// `compute_s` the simulated compute stream's busy time (HBM-bound, MXU-bound and overhead) and
// `step_s` the simulated step, both >= 0.
InferenceRoofline InferenceRooflineOf(const topology::ChipSpec& chip, const ModelSpec& model,
                                      const InferenceLayout& layout,
                                      const InferenceOptions& options,
                                      const InferenceMemoryBreakdown& memory,
                                      const schedule::Program& program, double compute_s,
                                      double step_s);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_INFERENCE_ROOFLINE_H_
