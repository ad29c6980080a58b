// From the messages of a scenario to the objects the commands run on: the System, the ModelSpec,
// the Layout, and the command-line names of the scenario's enums.
//
// Each Build* checks the part of the scenario it reads (it is safe on a scenario that was never
// validated) and returns the first error with its field path, and with file:line:col when given
// the SourceMap of the file it came from: "run.textproto:4:13: system.custom.chip.hbm_bytes: must
// be a finite number >= 0 (got -1)".

#ifndef PODSIM_SCENARIO_SCENARIO_BUILD_H_
#define PODSIM_SCENARIO_SCENARIO_BUILD_H_

#include <optional>
#include <string_view>

#include "scenario.pb.h"
#include "scenario/source_map.h"
#include "sim/status.h"
#include "topology/system.h"
#include "workloads/inference_ops.h"
#include "workloads/layer_ops.h"
#include "workloads/layout.h"
#include "workloads/model_spec.h"

namespace podsim::scenario {

// The system of `spec` (at path "system"): a preset through topology::ParseSystem, or the custom
// chip on its generic fabric. A custom system's name is "<kind>:<shape> of <chip name>", e.g.
// "torus:4x4x4 of tpu-v5p-custom".
sim::StatusOr<topology::System> BuildSystem(const System& spec, const SourceMap& source = {});

// The model of `spec`, which sits at `path` ("train.model"): a preset or custom: string through
// workloads::ParseModel, or the custom fields over their base.
sim::StatusOr<workloads::ModelSpec> BuildModel(const Model& spec, std::string_view path,
                                               const SourceMap& source = {});

// The mesh axes of `spec` at `path`: its text through workloads::ParseLayout, or its fields.
// Checks the text's grammar and the ranges only; ValidateLayout checks it against a model.
sim::StatusOr<workloads::Layout> BuildLayout(const Layout& spec, std::string_view path,
                                             const SourceMap& source = {});

// The inference layout of `spec` (at "infer.layout"): its text through
// workloads::ParseInferenceLayout, or its fields. Checks the grammar and ranges only;
// workloads::ValidateInferenceLayout checks it against a model, a system and a step.
sim::StatusOr<workloads::InferenceLayout> BuildInferLayout(const InferLayout& spec,
                                                           const SourceMap& source = {});

// The training layout: train.layout with train's microbatches, schedule and virtual_stages.
sim::StatusOr<workloads::Layout> BuildTrainLayout(const Train& train, const SourceMap& source = {});

// The recomputation policy of `train` (NONE when not given).
workloads::RecomputePolicy RecomputePolicyOf(const Train& train);

// The op options of `train`: its recomputation policy and saved_ops, and its attention kernel
// (FLASH when not given); the rest as workloads::OpOptions defaults them.
workloads::OpOptions OpOptionsOf(const Train& train);
// A sweep's options for every layout (precision, distributed optimizer, tp overlap); the sweep
// sets each layout's recompute policy, and the tp overlap only where the layout has sp.
workloads::OpOptions OpOptionsOf(const Sweep& sweep);

// Collective ops by their command-line names (--op): "all-gather", "reduce-scatter",
// "all-reduce", "all-to-all", "broadcast", "p2p"; OP_UNSPECIFIED is "".
std::string_view CollectiveOpName(Collective::Op op);
std::optional<Collective::Op> CollectiveOpFromName(std::string_view name);

}  // namespace podsim::scenario

#endif  // PODSIM_SCENARIO_SCENARIO_BUILD_H_
