// `podsim infer`: one inference step -- a prefill or a decode step -- of a model on a system under
// an inference layout (design.md), with the serving views built on it:
//
//   podsim infer --system S --model M --layout tp=..[,tp2=..][,dp=..][,kv_shard=heads|batch]
//                --phase prefill|decode --batch B --context T [--weights bf16|int8|int4]
//                [--kv bf16|int8] [--chip-hour-usd X] [--json]
//     Step latency, tokens/s (total and per chip), memory per chip and whether it fits, the time
//     breakdown and the bottleneck (workloads/inference_schedule.h). With --chip-hour-usd, the
//     cost per million tokens the step processes.
//   --batch 1,8,16,...
//     One step per batch size: latency against throughput (the Pareto view). A point is
//     Pareto-optimal when it fits and no other point that fits is both as fast and as productive,
//     and better in one.
//   --prefill-len P --decode-len G --batch B   (instead of --phase and --context)
//     A disaggregated deployment (the book's Ch8): prefill servers and decode servers, each the
//     whole system under the layout. Prefill runs one prompt of P tokens per replica, its cache
//     sharded by heads (it moves to a decode server); decode runs batch B under the layout at the
//     mean cache length of a generation, P + G/2 tokens (memory at the longest, P + G).
//     Prints prefill servers per decode server (inference_schedule.h) and, with --chip-hour-usd,
//     the cost per million generated tokens of the whole deployment.
//
// Bad values are one error line naming the flag and exit 1; a missing or conflicting flag is a
// usage error, exit 2.

#ifndef PODSIM_CLI_INFER_COMMAND_H_
#define PODSIM_CLI_INFER_COMMAND_H_

#include "cli/command.h"

namespace podsim::cli {

Command AddInferCommand(CLI::App& app);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_INFER_COMMAND_H_
