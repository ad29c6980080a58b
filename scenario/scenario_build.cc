#include "scenario/scenario_build.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "scenario/field_checks.h"
#include "topology/chip_spec.h"
#include "topology/generic_builder.h"
#include "workloads/recompute_layers.h"

namespace podsim::scenario {

namespace {

using internal::CheckEnum;
using internal::CheckNonNegative;
using internal::CheckRange;
using internal::FormatNumber;
using internal::Invalid;

// Bounds matching the parsers the fields stand in for: topology/system.cc (axis lengths),
// workloads/model_spec.cc (kMaxDimension) and workloads/layout.cc (kMaxAxis).
constexpr int64_t kMaxAxisLength = 1 << 20;
constexpr int64_t kMaxModelDimension = int64_t{1} << 24;
constexpr int64_t kMaxLayoutAxis = 1 << 20;
constexpr int64_t kMaxPorts = 4096;

std::string Join(std::string_view a, std::string_view b) {
  std::string path(a);
  path += '.';
  path += b;
  return path;
}

std::string ShapeText(const google::protobuf::RepeatedField<int32_t>& shape) {
  std::string text;
  for (int extent : shape) {
    if (!text.empty()) text += 'x';
    text += std::to_string(extent);
  }
  return text;
}

// wrap: "all", "none" or the letters of the axes that wrap, each once.
sim::StatusOr<std::vector<bool>> ParseWrap(std::string_view text, size_t axes,
                                           const SourceMap& source, std::string_view path) {
  if (text == "all") return std::vector<bool>(axes, true);
  if (text == "none") return std::vector<bool>(axes, false);
  const std::string_view letters = std::string_view("xyz").substr(0, axes);
  std::vector<bool> wraps(axes, false);
  for (char c : text) {
    const size_t axis = letters.find(c);
    if (axis == std::string_view::npos || wraps[axis]) {
      return Invalid(source, path,
                     "expected \"all\", \"none\" or the axes that wrap, each once, from \"" +
                         std::string(letters) + "\" (got \"" + std::string(text) + "\")");
    }
    wraps[axis] = true;
  }
  if (text.empty()) {
    return Invalid(source, path, "expected \"all\", \"none\" or the axes that wrap (got \"\")");
  }
  return wraps;
}

sim::StatusOr<topology::ChipSpec> BuildChip(const Chip& spec, const SourceMap& source) {
  const std::string path = "system.custom.chip";
  topology::ChipSpec chip;
  if (spec.has_base()) {
    sim::StatusOr<topology::ChipSpec> base = topology::ChipPreset(spec.base());
    if (!base.ok()) return source.Annotate(base.status(), Join(path, "base"));
    chip = *std::move(base);
    chip.name = spec.base() + "-custom";
  } else {
    chip.name = "custom";
    chip.family = topology::ChipFamily::kGeneric;
  }
  if (spec.has_name()) {
    if (spec.name().empty()) return Invalid(source, Join(path, "name"), "must not be empty");
    chip.name = spec.name();
  }
  if (spec.has_family()) {
    PODSIM_RETURN_IF_ERROR(CheckEnum(source, Join(path, "family"), Chip::Family_descriptor(),
                                     spec.family(), true, false));
    chip.family = spec.family() == Chip::TPU   ? topology::ChipFamily::kTpu
                  : spec.family() == Chip::GPU ? topology::ChipFamily::kGpu
                                               : topology::ChipFamily::kGeneric;
  }
  struct Amount {
    const char* field;
    bool present;
    double value;
    double topology::ChipSpec::*member;
  };
  const Amount amounts[] = {
      {"bf16_flops_per_s", spec.has_bf16_flops_per_s(), spec.bf16_flops_per_s(),
       &topology::ChipSpec::bf16_flops_per_s},
      {"int8_flops_per_s", spec.has_int8_flops_per_s(), spec.int8_flops_per_s(),
       &topology::ChipSpec::int8_flops_per_s},
      {"fp8_flops_per_s", spec.has_fp8_flops_per_s(), spec.fp8_flops_per_s(),
       &topology::ChipSpec::fp8_flops_per_s},
      {"hbm_bytes", spec.has_hbm_bytes(), spec.hbm_bytes(), &topology::ChipSpec::hbm_bytes},
      {"hbm_bytes_per_s", spec.has_hbm_bytes_per_s(), spec.hbm_bytes_per_s(),
       &topology::ChipSpec::hbm_bytes_per_s},
      {"vmem_bytes", spec.has_vmem_bytes(), spec.vmem_bytes(), &topology::ChipSpec::vmem_bytes},
      {"scale_up_link_bytes_per_s", spec.has_scale_up_link_bytes_per_s(),
       spec.scale_up_link_bytes_per_s(), &topology::ChipSpec::scale_up_link_bytes_per_s},
      {"pcie_bytes_per_s", spec.has_pcie_bytes_per_s(), spec.pcie_bytes_per_s(),
       &topology::ChipSpec::pcie_bytes_per_s},
      {"scale_out_bytes_per_s", spec.has_scale_out_bytes_per_s(), spec.scale_out_bytes_per_s(),
       &topology::ChipSpec::scale_out_bytes_per_s},
  };
  for (const Amount& amount : amounts) {
    if (!amount.present) continue;
    PODSIM_RETURN_IF_ERROR(CheckNonNegative(source, Join(path, amount.field), amount.value));
    chip.*amount.member = amount.value;
  }
  if (!(chip.scale_up_link_bytes_per_s > 0)) {
    const std::string field = Join(path, "scale_up_link_bytes_per_s");
    return spec.has_scale_up_link_bytes_per_s()
               ? Invalid(source, field,
                         "must be > 0: every link of the fabric carries it (got " +
                             FormatNumber(spec.scale_up_link_bytes_per_s()) + ")")
               : Invalid(source, field,
                         "missing; every link of the fabric carries it (give it or a base)");
  }
  if (spec.has_hop_latency_s()) {
    const double latency = spec.hop_latency_s();
    if (!std::isfinite(latency) || latency < 0 || latency > 1) {
      return Invalid(source, Join(path, "hop_latency_s"),
                     "must be seconds in [0, 1] (got " + FormatNumber(latency) + ")");
    }
    chip.hop_latency = sim::Time::FromSecondsRounded(latency);
  }
  if (spec.has_fp8_gemm_tn_only()) chip.fp8_gemm_tn_only = spec.fp8_gemm_tn_only();
  if (spec.has_fp8_block_scaled()) chip.fp8_block_scaled = spec.fp8_block_scaled();
  if (spec.has_scale_up_ports()) {
    PODSIM_RETURN_IF_ERROR(
        CheckRange(source, Join(path, "scale_up_ports"), spec.scale_up_ports(), 0, kMaxPorts));
    chip.scale_up_ports = spec.scale_up_ports();
  }
  if (spec.host_shape_size() > 0) {
    if (spec.host_shape_size() > 3) {
      return Invalid(source, Join(path, "host_shape"),
                     "at most 3 axes (got " + std::to_string(spec.host_shape_size()) + ")");
    }
    int64_t product = 1;
    for (int i = 0; i < spec.host_shape_size(); ++i) {
      PODSIM_RETURN_IF_ERROR(CheckRange(source, Join(path, "host_shape[" + std::to_string(i) + "]"),
                                        spec.host_shape(i), 1, kMaxAxisLength));
      product *= spec.host_shape(i);
    }
    if (product > kMaxAxisLength) {
      return Invalid(source, Join(path, "host_shape"),
                     "more than " + std::to_string(kMaxAxisLength) + " chips per host");
    }
    chip.host_shape.assign(spec.host_shape().begin(), spec.host_shape().end());
    chip.chips_per_host = static_cast<int>(product);
  }
  if (spec.has_chips_per_host()) {
    const std::string field = Join(path, "chips_per_host");
    PODSIM_RETURN_IF_ERROR(CheckRange(source, field, spec.chips_per_host(), 1, kMaxAxisLength));
    if (spec.host_shape_size() > 0 && spec.chips_per_host() != chip.chips_per_host) {
      return Invalid(source, field,
                     "must equal the product of host_shape, " +
                         std::to_string(chip.chips_per_host) + " (got " +
                         std::to_string(spec.chips_per_host()) + ")");
    }
    if (spec.host_shape_size() == 0) chip.host_shape.clear();  // The base's no longer tiles it.
    chip.chips_per_host = spec.chips_per_host();
  }
  return chip;
}

sim::StatusOr<topology::System> BuildCustom(const CustomSystem& spec, const SourceMap& source) {
  if (!spec.has_chip()) {
    return Invalid(source, "system.custom.chip",
                   "missing; give chip { base: \"tpu-v5p\" ... } or every field of the chip");
  }
  if (!spec.has_fabric()) {
    return Invalid(source, "system.custom.fabric",
                   "missing; give fabric { kind: TORUS shape: [4, 4] } (or RING, SWITCH)");
  }
  PODSIM_ASSIGN_OR_RETURN(topology::ChipSpec chip, BuildChip(spec.chip(), source));

  const Fabric& fabric = spec.fabric();
  const std::string path = "system.custom.fabric";
  PODSIM_RETURN_IF_ERROR(CheckEnum(source, Join(path, "kind"), Fabric::Kind_descriptor(),
                                   fabric.kind(), fabric.has_kind(), true));
  const int max_axes = fabric.kind() == Fabric::TORUS ? 3 : 1;
  if (fabric.shape_size() < 1 || fabric.shape_size() > max_axes) {
    return Invalid(source, Join(path, "shape"),
                   fabric.kind() == Fabric::TORUS
                       ? "a torus needs 1 to 3 axis lengths, like [4, 4] (got " +
                             std::to_string(fabric.shape_size()) + ")"
                       : "a " + Fabric::Kind_Name(fabric.kind()) +
                             " needs one length, its chip count, like [8] (got " +
                             std::to_string(fabric.shape_size()) + ")");
  }
  for (int i = 0; i < fabric.shape_size(); ++i) {
    PODSIM_RETURN_IF_ERROR(CheckRange(source, Join(path, "shape[" + std::to_string(i) + "]"),
                                      fabric.shape(i), 1, kMaxAxisLength));
  }
  std::vector<bool> wraps(fabric.shape_size(), true);
  if (fabric.has_wrap()) {
    if (fabric.kind() != Fabric::TORUS) {
      return Invalid(
          source, Join(path, "wrap"),
          "only a TORUS has wrap options (got kind " + Fabric::Kind_Name(fabric.kind()) + ")");
    }
    PODSIM_ASSIGN_OR_RETURN(wraps,
                            ParseWrap(fabric.wrap(), wraps.size(), source, Join(path, "wrap")));
  }

  const topology::GenericLinkOptions link{chip.scale_up_link_bytes_per_s, chip.hop_latency};
  topology::System system;
  sim::StatusOr<topology::Fabric> built = sim::Status::InvalidArgument("no fabric");
  int ports = 0;
  std::string kind;
  switch (fabric.kind()) {
    case Fabric::RING:
      system.kind = topology::SystemKind::kRing;
      kind = "ring";
      ports = 2;
      built = topology::BuildRing(fabric.shape(0), link);
      break;
    case Fabric::TORUS:
      system.kind = topology::SystemKind::kTorus;
      kind = "torus";
      ports = 2 * fabric.shape_size();
      built =
          topology::BuildGenericTorus({fabric.shape().begin(), fabric.shape().end()}, wraps, link);
      break;
    default:
      system.kind = topology::SystemKind::kSwitch;
      kind = "switch";
      ports = 1;
      built = topology::BuildSwitch(fabric.shape(0), link);
      break;
  }
  if (!built.ok()) return source.Annotate(built.status(), path);
  if (!spec.chip().has_scale_up_ports() && !spec.chip().has_base()) chip.scale_up_ports = ports;
  system.name = kind + ":" + ShapeText(fabric.shape()) + " of " + chip.name;
  system.chip = std::move(chip);
  system.fabric = *std::move(built);
  return system;
}

sim::StatusOr<workloads::ModelSpec> BuildCustomModel(const CustomModel& spec,
                                                     const std::string& path,
                                                     const SourceMap& source) {
  workloads::ModelSpec model;
  if (spec.has_base()) {
    const std::string field = Join(path, "base");
    if (spec.base().starts_with("custom:")) {
      return Invalid(source, field, "must be a preset name; write the custom fields instead");
    }
    sim::StatusOr<workloads::ModelSpec> base = workloads::ParseModel(spec.base());
    if (!base.ok()) return source.Annotate(base.status(), field);
    model = *std::move(base);
    model.name = spec.base() + "-custom";
  } else {
    model.name = "custom";
  }
  if (spec.has_name()) {
    if (spec.name().empty()) return Invalid(source, Join(path, "name"), "must not be empty");
    model.name = spec.name();
  }
  struct Size {
    const char* field;
    bool present;
    int64_t value;
    int64_t workloads::ModelSpec::*member;
  };
  const Size sizes[] = {
      {"layers", spec.has_layers(), spec.layers(), &workloads::ModelSpec::layers},
      {"d_model", spec.has_d_model(), spec.d_model(), &workloads::ModelSpec::d_model},
      {"ffn", spec.has_ffn(), spec.ffn(), &workloads::ModelSpec::ffn},
      {"heads", spec.has_heads(), spec.heads(), &workloads::ModelSpec::heads},
      {"kv_heads", spec.has_kv_heads(), spec.kv_heads(), &workloads::ModelSpec::kv_heads},
      {"head_dim", spec.has_head_dim(), spec.head_dim(), &workloads::ModelSpec::head_dim},
      {"vocab", spec.has_vocab(), spec.vocab(), &workloads::ModelSpec::vocab},
  };
  for (const Size& size : sizes) {
    const std::string field = Join(path, size.field);
    if (!size.present) {
      if (spec.has_base()) continue;
      return Invalid(source, field,
                     "missing; without a base, layers, d_model, ffn, heads, kv_heads, head_dim "
                     "and vocab are required");
    }
    PODSIM_RETURN_IF_ERROR(CheckRange(source, field, size.value, 1, kMaxModelDimension));
    model.*size.member = size.value;
  }
  if (model.heads % model.kv_heads != 0) {
    return Invalid(source, Join(path, spec.has_kv_heads() ? "kv_heads" : "heads"),
                   "kv_heads must divide heads (got heads=" + std::to_string(model.heads) +
                       ", kv_heads=" + std::to_string(model.kv_heads) + ")");
  }
  // Mixture of experts: every field optional; ValidateModel checks them together.
  const Size experts[] = {
      {"experts", spec.has_experts(), spec.experts(), &workloads::ModelSpec::experts},
      {"top_k", spec.has_top_k(), spec.top_k(), &workloads::ModelSpec::top_k},
      {"expert_ffn", spec.has_expert_ffn(), spec.expert_ffn(), &workloads::ModelSpec::expert_ffn},
      {"shared_ffn", spec.has_shared_ffn(), spec.shared_ffn(), &workloads::ModelSpec::shared_ffn},
      {"dense_layers", spec.has_dense_layers(), spec.dense_layers(),
       &workloads::ModelSpec::dense_layers},
  };
  for (const Size& size : experts) {
    if (!size.present) continue;
    PODSIM_RETURN_IF_ERROR(
        CheckRange(source, Join(path, size.field), size.value, 0, kMaxModelDimension));
    model.*size.member = size.value;
  }
  // A routed expert is as wide as the dense MLP unless stated (as the command line's keys).
  if (model.experts > 0 && model.expert_ffn == 0) model.expert_ffn = model.ffn;
  if (spec.has_gated_mlp()) model.gated_mlp = spec.gated_mlp();
  if (spec.has_tied_embeddings()) model.tied_embeddings = spec.tied_embeddings();
  if (spec.has_linear_biases()) model.linear_biases = spec.linear_biases();
  if (spec.has_dropout()) model.dropout = spec.dropout();
  if (spec.has_norm()) {
    PODSIM_RETURN_IF_ERROR(CheckEnum(source, Join(path, "norm"), CustomModel::Norm_descriptor(),
                                     spec.norm(), true, false));
    model.norm =
        spec.norm() == CustomModel::LAYER ? workloads::NormKind::kLayer : workloads::NormKind::kRms;
  }
  if (spec.has_learned_positions()) {
    PODSIM_RETURN_IF_ERROR(CheckRange(source, Join(path, "learned_positions"),
                                      spec.learned_positions(), 0, kMaxModelDimension));
    model.learned_positions = spec.learned_positions();
  }
  // A backstop: the checks above cover what ValidateModel checks today.
  PODSIM_RETURN_IF_ERROR(source.Annotate(workloads::ValidateModel(model), path));
  return model;
}

}  // namespace

sim::StatusOr<topology::System> BuildSystem(const System& spec, const SourceMap& source) {
  switch (spec.kind_case()) {
    case System::kPreset: {
      sim::StatusOr<topology::System> system = topology::ParseSystem(spec.preset());
      if (!system.ok()) return source.Annotate(system.status(), "system.preset");
      return system;
    }
    case System::kCustom:
      return BuildCustom(spec.custom(), source);
    default:
      return Invalid(source, "system",
                     "missing; give preset: \"tpu-v5p:4x4x4\" (a SYSTEM string) or custom { chip "
                     "{ ... } fabric { ... } }");
  }
}

sim::StatusOr<workloads::ModelSpec> BuildModel(const Model& spec, std::string_view path,
                                               const SourceMap& source) {
  switch (spec.kind_case()) {
    case Model::kPreset: {
      sim::StatusOr<workloads::ModelSpec> model = workloads::ParseModel(spec.preset());
      if (!model.ok()) return source.Annotate(model.status(), Join(path, "preset"));
      return model;
    }
    case Model::kCustom:
      return BuildCustomModel(spec.custom(), Join(path, "custom"), source);
    default:
      return Invalid(source, path,
                     "missing; give preset: \"llama3-70b\" (a MODEL string) or custom { base: "
                     "\"llama3-8b\" layers: 16 ... }");
  }
}

sim::StatusOr<workloads::Layout> BuildLayout(const Layout& spec, std::string_view path,
                                             const SourceMap& source) {
  struct Axis {
    const char* field;
    bool present;
    int32_t value;
    int workloads::Layout::*member;
  };
  const Axis axes[] = {
      {"dp", spec.has_dp(), spec.dp(), &workloads::Layout::dp},
      {"fsdp", spec.has_fsdp(), spec.fsdp(), &workloads::Layout::fsdp},
      {"tp", spec.has_tp(), spec.tp(), &workloads::Layout::tp},
      {"pp", spec.has_pp(), spec.pp(), &workloads::Layout::pp},
      {"cp", spec.has_cp(), spec.cp(), &workloads::Layout::cp},
      {"ep", spec.has_ep(), spec.ep(), &workloads::Layout::ep},
      {"etp", spec.has_etp(), spec.etp(), &workloads::Layout::etp},
      {"seq_shards", spec.has_seq_shards(), spec.seq_shards(), &workloads::Layout::seq_shards},
  };
  if (spec.has_text()) {
    for (const Axis& axis : axes) {
      if (axis.present) {
        return Invalid(source, Join(path, axis.field),
                       "give the layout as text or as axis fields, not both");
      }
    }
    for (const auto& [present, field] :
         {std::pair{spec.has_sp(), "sp"}, std::pair{spec.has_cp_comm(), "cp_comm"}}) {
      if (present) {
        return Invalid(source, Join(path, field),
                       "give the layout as text or as axis fields, not both");
      }
    }
    sim::StatusOr<workloads::Layout> layout = workloads::ParseLayout(spec.text());
    if (!layout.ok()) return source.Annotate(layout.status(), Join(path, "text"));
    return layout;
  }
  workloads::Layout layout;
  for (const Axis& axis : axes) {
    if (!axis.present) continue;
    PODSIM_RETURN_IF_ERROR(
        CheckRange(source, Join(path, axis.field), axis.value, 1, kMaxLayoutAxis));
    layout.*axis.member = axis.value;
  }
  layout.sp = spec.sp();
  if (spec.cp_comm() == Layout::RING) layout.cp_comm = workloads::ContextComm::kRing;
  if (spec.cp_comm() == Layout::ALL_GATHER) layout.cp_comm = workloads::ContextComm::kAllGather;
  return layout;
}

sim::StatusOr<workloads::InferenceLayout> BuildInferLayout(const InferLayout& spec,
                                                           const SourceMap& source) {
  const std::string path = "infer.layout";
  struct Axis {
    const char* field;
    bool present;
    int32_t value;
    int workloads::InferenceLayout::*member;
  };
  const Axis axes[] = {
      {"tp", spec.has_tp(), spec.tp(), &workloads::InferenceLayout::tp},
      {"tp2", spec.has_tp2(), spec.tp2(), &workloads::InferenceLayout::tp2},
      {"dp", spec.has_dp(), spec.dp(), &workloads::InferenceLayout::dp},
      {"ep", spec.has_ep(), spec.ep(), &workloads::InferenceLayout::ep},
  };
  const bool fields =
      spec.has_tp() || spec.has_tp2() || spec.has_dp() || spec.has_kv_shard() || spec.has_ep();
  if (spec.has_text()) {
    if (fields) return Invalid(source, path, "give the layout as text or as axis fields, not both");
    sim::StatusOr<workloads::InferenceLayout> layout = workloads::ParseInferenceLayout(spec.text());
    if (!layout.ok()) return source.Annotate(layout.status(), Join(path, "text"));
    return layout;
  }
  workloads::InferenceLayout layout;
  for (const Axis& axis : axes) {
    if (!axis.present) continue;
    PODSIM_RETURN_IF_ERROR(
        CheckRange(source, Join(path, axis.field), axis.value, 1, kMaxLayoutAxis));
    layout.*axis.member = axis.value;
  }
  PODSIM_RETURN_IF_ERROR(CheckEnum(source, Join(path, "kv_shard"),
                                   InferLayout::KvShard_descriptor(), spec.kv_shard(),
                                   spec.has_kv_shard(), false));
  if (spec.kv_shard() == InferLayout::BATCH) layout.kv_shard = workloads::KvShard::kBatch;
  return layout;
}

sim::StatusOr<workloads::Layout> BuildTrainLayout(const Train& train, const SourceMap& source) {
  if (!train.has_layout()) {
    return Invalid(source, "train.layout",
                   "missing; give text: \"dp=..,fsdp=..,tp=..,pp=..\" or the axes as fields");
  }
  PODSIM_ASSIGN_OR_RETURN(workloads::Layout layout,
                          BuildLayout(train.layout(), "train.layout", source));
  const workloads::Layout defaults;
  const bool text = train.layout().has_text();
  auto conflict = [&](const char* field, const std::string& given, const std::string& in_text) {
    return Invalid(source, std::string("train.") + field,
                   given + " conflicts with " + field + "=" + in_text + " in train.layout.text");
  };
  if (train.has_microbatches()) {
    PODSIM_RETURN_IF_ERROR(
        CheckRange(source, "train.microbatches", train.microbatches(), 1, kMaxLayoutAxis));
    if (text && layout.microbatches != defaults.microbatches &&
        layout.microbatches != train.microbatches()) {
      return conflict("microbatches", std::to_string(train.microbatches()),
                      std::to_string(layout.microbatches));
    }
    layout.microbatches = train.microbatches();
  }
  if (train.has_schedule()) {
    PODSIM_RETURN_IF_ERROR(CheckEnum(source, "train.schedule", Train::Schedule_descriptor(),
                                     train.schedule(), true, false));
    const workloads::PipelineSchedule schedule =
        train.schedule() == Train::GPIPE         ? workloads::PipelineSchedule::kGpipe
        : train.schedule() == Train::INTERLEAVED ? workloads::PipelineSchedule::kInterleavedOneFOneB
                                                 : workloads::PipelineSchedule::kOneFOneB;
    if (text && layout.schedule != defaults.schedule && layout.schedule != schedule) {
      return conflict("schedule", Train::Schedule_Name(train.schedule()),
                      std::string(workloads::PipelineScheduleName(layout.schedule)));
    }
    layout.schedule = schedule;
  }
  if (train.has_virtual_stages()) {
    PODSIM_RETURN_IF_ERROR(
        CheckRange(source, "train.virtual_stages", train.virtual_stages(), 1, kMaxLayoutAxis));
    if (text && layout.virtual_stages != defaults.virtual_stages &&
        layout.virtual_stages != train.virtual_stages()) {
      return conflict("virtual_stages", std::to_string(train.virtual_stages()),
                      std::to_string(layout.virtual_stages));
    }
    layout.virtual_stages = train.virtual_stages();
  }
  if (layout.virtual_stages > 1 &&
      layout.schedule != workloads::PipelineSchedule::kInterleavedOneFOneB) {
    return Invalid(
        source, "train.virtual_stages",
        "virtual_stages=" + std::to_string(layout.virtual_stages) + " needs schedule: INTERLEAVED");
  }
  if (train.has_micro_batch_size()) {
    PODSIM_RETURN_IF_ERROR(
        CheckRange(source, "train.micro_batch_size", train.micro_batch_size(), 1, kMaxLayoutAxis));
    if (text && layout.micro_batch_size != defaults.micro_batch_size &&
        layout.micro_batch_size != train.micro_batch_size()) {
      return conflict("micro_batch_size", std::to_string(train.micro_batch_size()),
                      std::to_string(layout.micro_batch_size));
    }
    layout.micro_batch_size = train.micro_batch_size();
  }
  if (train.seq() > 0 && train.batch_tokens() % train.seq() == 0) {
    // The sequence shards and the microbatch count follow from the batch (an invalid batch is
    // the caller's error to report).
    const workloads::BatchSpec batch{train.batch_tokens() / train.seq(), train.seq()};
    sim::StatusOr<workloads::Layout> resolved = workloads::ResolveLayout(layout, batch);
    if (!resolved.ok()) {
      return source.Annotate(resolved.status(), train.has_micro_batch_size()
                                                    ? "train.micro_batch_size"
                                                    : "train.layout");
    }
    layout = *resolved;
  }
  return layout;
}

workloads::RecomputePolicy RecomputePolicyOf(const Train& train) {
  switch (train.recompute()) {
    case Train::SELECTIVE:
      return workloads::RecomputePolicy::kSelective;
    case Train::FULL:
      return workloads::RecomputePolicy::kFull;
    case Train::SAVE_NAMED:
      return workloads::RecomputePolicy::kSaveNamed;
    default:
      return workloads::RecomputePolicy::kNone;
  }
}

namespace {

// The framework options Train and Sweep share (the fields are named alike).
template <typename Message>
workloads::OpOptions FrameworkOptionsOf(const Message& message) {
  workloads::Framework framework = workloads::Framework::kBook;
  if (message.has_framework()) {
    // CheckScenario has named a bad framework; an unchecked one keeps the default.
    sim::StatusOr<workloads::Framework> named = workloads::FrameworkNamed(message.framework());
    if (named.ok()) framework = *named;
  }
  return workloads::FrameworkOptions(framework);
}

// The fields that override the framework's defaults and the options no framework sets.
template <typename Message>
void SetFrameworkOptions(const Message& message, workloads::OpOptions* options) {
  options->distributed_optimizer = message.distributed_optimizer();
  if (message.has_overlap_grad_reduce()) {
    options->overlap_grad_reduce = message.overlap_grad_reduce();
  }
  if (message.has_overlap_param_gather()) {
    options->overlap_param_gather = message.overlap_param_gather();
  }
  options->tp_comm_overlap = message.tp_comm_overlap();
  options->ep_comm_overlap = message.ep_comm_overlap();
  options->fp8 = message.fp8();
  options->fsdp_reshard_after_forward = !message.no_reshard_after_forward();
  options->fp8_all_gather = message.fp8_all_gather();
  options->fp8_dispatch = message.fp8_dispatch();
  if (message.has_kernels()) {
    // CheckScenario has named a bad library; an unchecked one keeps the default.
    sim::StatusOr<workloads::KernelLibrary> kernels =
        workloads::KernelLibraryNamed(message.kernels());
    if (kernels.ok()) options->kernels = *kernels;
  }
  if (message.has_loss()) {
    // CheckScenario has named a bad loss; an unchecked one keeps the default.
    sim::StatusOr<workloads::LossKernel> loss = workloads::LossKernelNamed(message.loss());
    if (loss.ok()) options->loss = *loss;
  }
  if (message.has_precision()) {
    // CheckScenario has named a bad recipe; an unchecked one keeps the default.
    sim::StatusOr<workloads::PrecisionRecipe> recipe =
        workloads::PrecisionRecipeNamed(message.precision());
    if (recipe.ok()) options->precision = *recipe;
  }
  options->precision.bf16_gradients = message.grad_reduce_in_bf16();
  if (message.has_fp8_library()) {
    // CheckScenario has named a bad library; an unchecked one keeps the default.
    sim::StatusOr<workloads::Fp8Library> library =
        workloads::Fp8LibraryNamed(message.fp8_library());
    if (library.ok()) options->fp8_library = *library;
  }
  if (message.has_fp8_recipe()) {
    // CheckScenario has named a bad recipe; an unchecked one keeps the default.
    sim::StatusOr<workloads::Fp8Recipe> recipe = workloads::Fp8RecipeNamed(message.fp8_recipe());
    if (recipe.ok()) options->fp8_recipe = *recipe;
  }
}

}  // namespace

workloads::OpOptions OpOptionsOf(const Sweep& sweep) {
  workloads::OpOptions options = FrameworkOptionsOf(sweep);
  SetFrameworkOptions(sweep, &options);
  return options;
}

workloads::OpOptions OpOptionsOf(const Train& train) {
  workloads::OpOptions options = FrameworkOptionsOf(train);
  options.recompute = RecomputePolicyOf(train);
  options.saved_ops.assign(train.saved_ops().begin(), train.saved_ops().end());
  options.offloaded_ops.assign(train.offloaded_ops().begin(), train.offloaded_ops().end());
  if (train.has_recompute_layers()) {
    // CheckScenario has named a bad selection; an unchecked one keeps every layer.
    sim::StatusOr<workloads::RecomputeLayers> layers =
        workloads::RecomputeLayersNamed(train.recompute_layers());
    if (layers.ok()) options.recompute_layers = *layers;
  }
  options.attention = train.attention() == Train::MATERIALIZED
                          ? workloads::AttentionKernel::kMaterialized
                      : train.attention() == Train::FA2   ? workloads::AttentionKernel::kFlash2
                      : train.attention() == Train::CUDNN ? workloads::AttentionKernel::kCudnn
                                                          : workloads::AttentionKernel::kFlash;
  if (train.flops_convention() == Train::ALL_PAIRS) {
    options.model_flops_count = workloads::AttentionCount::kFull;
  }
  SetFrameworkOptions(train, &options);
  return options;
}

namespace {

constexpr std::pair<Collective::Op, std::string_view> kOpNames[] = {
    {Collective::ALL_GATHER, "all-gather"}, {Collective::REDUCE_SCATTER, "reduce-scatter"},
    {Collective::ALL_REDUCE, "all-reduce"}, {Collective::ALL_TO_ALL, "all-to-all"},
    {Collective::BROADCAST, "broadcast"},   {Collective::P2P, "p2p"},
    {Collective::SHIFT, "shift"},
};

}  // namespace

std::string_view CollectiveOpName(Collective::Op op) {
  for (const auto& [value, name] : kOpNames) {
    if (value == op) return name;
  }
  return "";
}

std::optional<Collective::Op> CollectiveOpFromName(std::string_view name) {
  for (const auto& [value, op_name] : kOpNames) {
    if (op_name == name) return value;
  }
  return std::nullopt;
}

}  // namespace podsim::scenario
