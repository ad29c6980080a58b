// Serving: what a deployment sustains from its two kinds of steps, the prefill of prompts and the
// decode of their tokens (the book's Ch8 disaggregated serving, AI12).
//
// A decode server runs `batch` sequences (whole system, split over dp) at the mean cache length
// prompt + generated / 2, one token each per decode step; a prefill server runs
// `prefill_batch` prompts per replica per step, with the cache sharded by heads (it is handed to
// a decode server, which shards it as its layout says). The prefill makes a request's first
// token, G - 1 decode steps the rest. In the ratio that lets prefill keep up, generated tokens/s
// per chip of the deployment is
//   batch x G / ((G - 1) x t_decode + batch / (prefill_batch x dp) x t_prefill) / chips,
// which is also the rate of one set of chips that spends its time on the two kinds of work in
// that proportion: in-flight batching (TensorRT-LLM, vLLM) runs the prompts that replace
// finished requests in the iterations of the running ones' tokens, and per generated token does
// the same work, except that an iteration mixing both reads the weights once where the two steps
// read them twice (a saving this leaves out; prefills are mostly compute-bound).
// The decode step at the mean cache length stands for the steps of growing caches: exact where a
// step's time is linear in the cache length (attention reads it), an approximation otherwise.

#ifndef PODSIM_WORKLOADS_SERVING_H_
#define PODSIM_WORKLOADS_SERVING_H_

#include <cstdint>

#include "sim/status.h"
#include "topology/system.h"
#include "workloads/inference_schedule.h"

namespace podsim::workloads {

struct ServingOptions {
  int64_t prompt_len = 1;     // P: prompt tokens per request.
  int64_t generated_len = 1;  // G: tokens generated per request.
  int64_t batch = 1;          // Sequences a decode step runs, whole system (split over dp).
  int64_t prefill_batch = 1;  // Prompts a prefill step runs per replica.
};

struct ServingResult {
  InferenceLayout prefill_layout;  // The layout, its cache sharded by heads.
  InferenceOptions prefill_options, decode_options;
  InferenceResult prefill, decode;
  // A decode server's memory per chip with every sequence at its longest (P + G - 1 cached).
  InferenceMemoryBreakdown decode_memory;
  double prefill_chips_per_decode_chip = 0;
  double generated_tokens_per_s_per_chip = 0;  // Over prefill and decode chips.
};

// Checks the layout for both steps (ValidateInferenceLayout, InvalidArgument naming the axis),
// simulates them and combines them as the header says. `options` gives the dtypes; its phase,
// batch and context are set here. REQUIRES: every ServingOptions field >= 1.
sim::StatusOr<ServingResult> SimulateServing(const topology::System& system, const ModelSpec& model,
                                             const InferenceLayout& layout,
                                             const InferenceOptions& options,
                                             const ServingOptions& serving,
                                             const StepOptions& step_options = {});

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_SERVING_H_
