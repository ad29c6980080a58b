#include "workloads/layout.h"

#include <cstdio>
#include <numeric>
#include <string>

#include "sim/check.h"
#include "topology/names.h"

namespace podsim::workloads {
namespace {

using topology::StrCat;

std::string Str(int64_t v) { return std::to_string(v); }

// An axis larger than any pod podsim simulates (design.md: 16,384 GPUs) by a wide margin, yet
// small enough that the product of four stays exact in int64.
constexpr int64_t kMaxAxis = 1 << 20;

constexpr std::string_view kLayoutGrammar =
    "dp=..,fsdp=..,tp=..,pp=..[,cp=..][,cp_comm=ring|all-gather][,ep=..][,etp=..]"
    "[,seq_shards=..][,sp=true|false]"
    "[,microbatches=..][,mbs=..]"
    "[,schedule=gpipe|1f1b|interleaved]"
    "[,virtual_stages=..][,order=AXIS/AXIS/..]";

}  // namespace

std::string_view PipelineScheduleName(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::kGpipe:
      return "gpipe";
    case PipelineSchedule::kOneFOneB:
      return "1f1b";
    case PipelineSchedule::kInterleavedOneFOneB:
      return "interleaved";
  }
  return "?";
}

std::string Layout::ToString() const {
  std::string text =
      StrCat({"dp=", Str(dp), ",fsdp=", Str(fsdp), ",tp=", Str(tp), ",pp=", Str(pp)});
  if (cp > 1) text += StrCat({",cp=", Str(cp)});
  if (ep > 1) text += StrCat({",ep=", Str(ep)});
  if (etp > 0) text += StrCat({",etp=", Str(etp)});
  if (seq_shards > 0) text += StrCat({",seq_shards=", Str(seq_shards)});
  if (cp_comm == ContextComm::kRing) text += ",cp_comm=ring";
  if (cp_comm == ContextComm::kAllGather) text += ",cp_comm=all-gather";
  if (sp) text += ",sp=1";
  if (microbatches > 0) text += StrCat({",microbatches=", Str(microbatches)});
  if (micro_batch_size > 0) text += StrCat({",mbs=", Str(micro_batch_size)});
  if (schedule != PipelineSchedule::kOneFOneB) {
    text += StrCat({",schedule=", PipelineScheduleName(schedule)});
  }
  if (virtual_stages != 1) text += StrCat({",virtual_stages=", Str(virtual_stages)});
  if (!order.empty()) {
    text += ",order=";
    for (size_t i = 0; i < order.size(); ++i) text += StrCat({i ? "/" : "", order[i]});
  }
  return text;
}

std::vector<topology::MeshAxis> Layout::MeshAxes() const {
  const int seq = sequence_shards();
  std::vector<topology::MeshAxis> axes = {{"dp", expert_dp() / (sequence_in_fsdp() ? 1 : seq)},
                                          {"fsdp", expert_fsdp() / (sequence_in_fsdp() ? seq : 1)},
                                          {"tp", tp},
                                          {"pp", pp}};
  const bool ep_first = ep_in_cp() && ep_axis() > 1;
  if (ep_first) axes.push_back({"ep", ep_axis()});
  if (context_shards() > 1) {
    axes.push_back({"cp", context_shards() / (ep_in_cp() ? ep_data() : 1)});
  }
  if (ep_axis() > 1 && !ep_first) axes.push_back({"ep", ep_axis()});
  return axes;
}

std::vector<std::string> Layout::PlacementOrder() const {
  if (!order.empty() || !ep_in_cp() || ep_axis() == 1) return order;
  return {"tp", "ep", "cp"};
}

std::vector<std::string> Layout::GroupAxes(std::string_view group) const {
  const bool ep_axis = this->ep_axis() > 1;
  const bool seq = sequence_shards() > 1;
  // The mesh axes of cp's chips: "ep" too where it is carved out of them.
  std::vector<std::string> cp_axes = {"cp"};
  if (ep_axis && ep_in_cp()) cp_axes = {"ep", "cp"};
  if (group == "dp") {
    std::vector<std::string> axes = {"dp"};
    if (ep_axis && ep_in_dp()) axes.push_back("ep");
    if (cp > 1 || (seq && !sequence_in_fsdp()))
      axes.insert(axes.end(), cp_axes.begin(), cp_axes.end());
    return axes;
  }
  if (group == "fsdp") {
    if (ep_axis && !ep_in_dp() && !ep_in_cp()) return {"fsdp", "ep"};
    if (seq && sequence_in_fsdp()) return {"fsdp", "cp"};
    return {"fsdp"};
  }
  if (group == "ep") {
    std::vector<std::string> axes;
    if (expert_tp() == 1 && tp > 1) axes.push_back("tp");
    if (ep_spans_cp()) axes.push_back("cp");
    if (ep_axis) axes.push_back("ep");
    return axes;
  }
  if (group == "expert-dp") {
    if (expert_cp() > 1) return {"dp", "cp"};
    return {"dp"};
  }
  if (group == "expert-fsdp") return {"fsdp"};
  if (group == "etp") return {"tp"};
  if (group == "cp") return cp_axes;
  PODSIM_CHECK(group == "tp" || group == "pp") << "no group " << group;
  return {std::string(group)};
}

namespace {

// The layers of part `index` of `layers` spread over `parts` (LayersOfStage's rule).
int64_t LayersOfPart(int64_t layers, int64_t parts, int64_t index) {
  const int64_t base = (layers + parts - 1) / parts;
  const int64_t fewer = base * parts - layers;
  // Parts giving up a layer, in order: 0, parts-1, 1, parts-2, ...; `rank` is this part's place.
  const int64_t from_end = parts - 1 - index;
  const int64_t rank = index <= from_end ? 2 * index : 2 * from_end + 1;
  return rank < fewer ? base - 1 : base;
}

}  // namespace

int64_t LayersOfChunk(const Layout& layout, const ModelSpec& model, int chunk) {
  return LayersOfPart(model.layers, int64_t{layout.pp} * layout.virtual_stages, chunk);
}

int64_t FirstLayerOfChunk(const Layout& layout, const ModelSpec& model, int chunk) {
  int64_t first = 0;
  for (int c = 0; c < chunk; ++c) first += LayersOfChunk(layout, model, c);
  return first;
}

int64_t LayersOfStage(const Layout& layout, const ModelSpec& model, int stage) {
  int64_t layers = 0;
  for (int c = 0; c < layout.virtual_stages; ++c) {
    layers += LayersOfChunk(layout, model, c * layout.pp + stage);
  }
  return layers;
}

int64_t FirstLayerOfStage(const Layout& layout, const ModelSpec& model, int stage) {
  PODSIM_CHECK(layout.virtual_stages == 1) << "FirstLayerOfStage with virtual stages";
  return FirstLayerOfChunk(layout, model, stage);
}

namespace {

// No system has more chips (topology/system.cc); bounding the product first keeps chips()
// (int64) and data_shards() (int) in range for layouts from any source (text or scenario fields).
sim::Status CheckChipProduct(const Layout& layout, std::string_view where) {
  constexpr double kMaxChips = 1 << 20;
  const double chips =
      static_cast<double>(layout.dp) * layout.fsdp * layout.tp * layout.pp * layout.cp;
  if (chips > kMaxChips) {
    return sim::Status::OutOfRange(StrCat({where, ": dp*fsdp*tp*pp*cp is over podsim's limit of ",
                                           Str(static_cast<int64_t>(kMaxChips)), " chips"}));
  }
  return sim::Status::Ok();
}

}  // namespace

sim::StatusOr<Layout> ParseLayout(std::string_view text) {
  static const std::vector<std::string_view> kKeys = {
      "dp",    "fsdp",         "tp",         "pp",  "cp",       "ep",
      "etp",   "sp",           "seq_shards", "mbs", "schedule", "virtual_stages",
      "order", "microbatches", "cp_comm"};
  const std::string where = StrCat({"layout '", text, "'"});
  if (text.empty()) {
    return sim::Status::ParseError(StrCat({where, ": expected ", kLayoutGrammar}));
  }
  Layout layout;
  PODSIM_ASSIGN_OR_RETURN(auto pairs, topology::ParseKeyValues(text, kKeys, where, kLayoutGrammar));
  for (const auto& [key, value] : pairs) {
    if (key == "schedule") {
      bool found = false;
      for (PipelineSchedule s : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB,
                                 PipelineSchedule::kInterleavedOneFOneB}) {
        if (PipelineScheduleName(s) == value) {
          layout.schedule = s;
          found = true;
        }
      }
      if (!found) {
        return sim::Status::InvalidArgument(
            StrCat({where, ": schedule must be gpipe, 1f1b or interleaved (got '", value, "')"}));
      }
      continue;
    }
    if (key == "order") {
      layout.order.clear();
      for (size_t begin = 0; begin <= value.size();) {
        size_t end = value.find('/', begin);
        if (end == std::string_view::npos) end = value.size();
        const std::string axis(value.substr(begin, end - begin));
        if (axis != "dp" && axis != "fsdp" && axis != "tp" && axis != "pp" && axis != "ep" &&
            axis != "cp") {
          return sim::Status::InvalidArgument(StrCat(
              {where, ": order lists mesh axes (dp, fsdp, tp, pp, cp, ep) separated by '/' (got '",
               value, "')"}));
        }
        if (std::find(layout.order.begin(), layout.order.end(), axis) != layout.order.end()) {
          return sim::Status::InvalidArgument(StrCat({where, ": order names ", axis, " twice"}));
        }
        layout.order.push_back(axis);
        begin = end + 1;
      }
      continue;
    }
    if (key == "cp_comm") {
      if (value != "ring" && value != "all-gather") {
        return sim::Status::InvalidArgument(
            StrCat({where, ": cp_comm must be ring or all-gather (got '", value, "')"}));
      }
      layout.cp_comm = value == "ring" ? ContextComm::kRing : ContextComm::kAllGather;
      continue;
    }
    if (key == "sp") {
      const std::optional<bool> sp = topology::ParseBool(value);
      if (!sp) {
        return sim::Status::InvalidArgument(
            StrCat({where, ": sp must be true, false, 1 or 0 (got '", value, "')"}));
      }
      layout.sp = *sp;
      continue;
    }
    std::optional<int64_t> n = topology::ParseCount(value, kMaxAxis);
    if (!n || *n < 1) {
      return sim::Status::InvalidArgument(StrCat({where, ": ", key, " must be an integer in [1, ",
                                                  Str(kMaxAxis), "] (got '", value, "')"}));
    }
    const int v = static_cast<int>(*n);
    if (key == "dp") layout.dp = v;
    if (key == "fsdp") layout.fsdp = v;
    if (key == "tp") layout.tp = v;
    if (key == "pp") layout.pp = v;
    if (key == "cp") layout.cp = v;
    if (key == "ep") layout.ep = v;
    if (key == "etp") layout.etp = v;
    if (key == "seq_shards") layout.seq_shards = v;
    if (key == "microbatches") layout.microbatches = v;
    if (key == "mbs") layout.micro_batch_size = v;
    if (key == "virtual_stages") layout.virtual_stages = v;
  }
  if (layout.virtual_stages > 1 && layout.schedule != PipelineSchedule::kInterleavedOneFOneB) {
    return sim::Status::InvalidArgument(StrCat(
        {where, ": virtual_stages=", Str(layout.virtual_stages), " needs schedule=interleaved"}));
  }
  PODSIM_RETURN_IF_ERROR(CheckChipProduct(layout, where));
  return layout;
}

sim::StatusOr<Layout> ResolveLayout(const Layout& stated, const BatchSpec& batch) {
  // Bounded first: the products below are then exact (CheckChipProduct).
  PODSIM_RETURN_IF_ERROR(CheckChipProduct(stated, StrCat({"layout ", stated.ToString()})));
  Layout layout = stated;
  const int64_t data = layout.data_shards();
  const int64_t m = layout.microbatch_count();
  const int64_t sequences = batch.sequences % m == 0 ? batch.sequences / m : batch.sequences;
  if (layout.seq_shards == 0 && sequences >= 1 && data > sequences) {
    // More data chips than sequences in a microbatch: the fewest shards per sequence that split
    // it evenly over them (1 stays unstated, 0).
    const int64_t shards = data / std::gcd(data, sequences);
    if (shards > 1) layout.seq_shards = static_cast<int>(shards);
  }
  if (layout.micro_batch_size == 0) return layout;
  const int64_t per_microbatch = int64_t{layout.batch_shards()} * layout.micro_batch_size;
  const std::string where = StrCat({"layout ", layout.ToString()});
  if (batch.sequences < per_microbatch || batch.sequences % per_microbatch != 0) {
    return sim::Status::InvalidArgument(
        StrCat({where, ": the batch of ", Str(batch.sequences), " sequences must be a multiple of ",
                layout.sequence_shards() > 1 ? "dp*fsdp/seq_shards*mbs = " : "dp*fsdp*mbs = ",
                Str(per_microbatch)}));
  }
  const int64_t count = batch.sequences / per_microbatch;
  if (layout.microbatches > 0 && layout.microbatches != count) {
    return sim::Status::InvalidArgument(
        StrCat({where, ": mbs=", Str(layout.micro_batch_size), " gives ", Str(count),
                " microbatches for a batch of ", Str(batch.sequences), " sequences, not ",
                Str(layout.microbatches)}));
  }
  if (count > kMaxAxis) {
    return sim::Status::InvalidArgument(
        StrCat({where, ": mbs=", Str(layout.micro_batch_size), " gives ", Str(count),
                " microbatches, over podsim's limit of ", Str(kMaxAxis)}));
  }
  layout.microbatches = static_cast<int>(count);
  return layout;
}

namespace {

// ep and etp against the model and the other axes (layout.h, ep).
template <typename Fail>
sim::Status ValidateExpertAxes(const Layout& layout, const ModelSpec& model, const Fail& fail) {
  const std::string of_model = StrCat({" of model '", model.name, "'"});
  const int tp = layout.tp;
  if (!model.moe()) {
    if (layout.ep > 1 || layout.etp > 0) {
      return fail(
          StrCat({"ep and etp need a model with experts; model '", model.name, "' has none"}));
    }
    return sim::Status::Ok();
  }
  if (model.experts % layout.ep != 0) {
    return fail(
        StrCat({"ep=", Str(layout.ep), " must divide experts=", Str(model.experts), of_model}));
  }
  if (layout.etp > 0 && layout.etp != 1 && layout.etp != tp) {
    return fail(StrCat({"etp=", Str(layout.etp), " must be 1 or tp=", Str(tp),
                        " (podsim folds the expert tensor parallelism into tp's group)"}));
  }
  if (tp > 1 && !layout.sp) {
    return fail(StrCat({"tp=", Str(tp), " with experts needs sp=1", of_model,
                        " (Megatron-LM requires sequence parallelism with MoE and tp)"}));
  }
  const int etp = layout.expert_tp();
  if (model.expert_ffn % etp != 0 || model.shared_ffn % tp != 0) {
    return fail(StrCat({"etp=", Str(etp), " must divide expert_ffn=", Str(model.expert_ffn),
                        " and tp=", Str(tp), " shared_ffn=", Str(model.shared_ffn), of_model}));
  }
  if (etp == 1 && tp > 1 && layout.ep % tp != 0) {
    return fail(StrCat({"ep=", Str(layout.ep), " must be a multiple of tp=", Str(tp),
                        " with etp=1 (the ep group spans the tp group)"}));
  }
  const int data = layout.ep_data();
  if (layout.cp > 1 && data % layout.cp != 0 && layout.cp % data != 0) {
    return fail(StrCat({"ep=", Str(layout.ep), " needs ", Str(data),
                        " chips of the data axes, cp's first: it must divide cp=", Str(layout.cp),
                        " or be a multiple of it"}));
  }
  const int carved = layout.ep_axis();
  if (!layout.ep_in_cp() && layout.dp % carved != 0 && layout.fsdp % carved != 0) {
    const std::string what =
        layout.ep_spans_cp()
            ? StrCat({"all cp=", Str(layout.cp), " of them and ", Str(carved), " more, which"})
            : std::string("it");
    return fail(StrCat({"ep=", Str(layout.ep), " needs ", Str(data), " chips of the data axes: ",
                        what, " must divide dp=", Str(layout.dp), " or fsdp=", Str(layout.fsdp)}));
  }
  return sim::Status::Ok();
}

}  // namespace

sim::Status ValidateLayout(const Layout& layout, const ModelSpec& model, int64_t chip_count,
                           const BatchSpec& batch) {
  const std::string where = StrCat({"layout ", layout.ToString()});
  PODSIM_RETURN_IF_ERROR(CheckChipProduct(layout, where));
  auto fail = [&](std::string_view what) {
    return sim::Status::InvalidArgument(StrCat({where, ": ", what}));
  };
  const std::string of_model = StrCat({" of model '", model.name, "'"});
  if (layout.chips() != chip_count) {
    return fail(
        StrCat({layout.cp > 1 ? "dp*fsdp*tp*pp*cp = " : "dp*fsdp*tp*pp = ", Str(layout.chips()),
                " must equal the ", Str(chip_count), " chips of the system"}));
  }
  const int tp = layout.tp;
  if (model.heads % tp != 0) {
    return fail(StrCat({"tp=", Str(tp), " must divide heads=", Str(model.heads), of_model}));
  }
  if (model.kv_heads % tp != 0 && tp % model.kv_heads != 0) {
    return fail(StrCat({"tp=", Str(tp), " must divide kv_heads=", Str(model.kv_heads),
                        " or be a multiple of it (kv heads replicated)", of_model}));
  }
  if (model.ffn % tp != 0) {
    return fail(StrCat({"tp=", Str(tp), " must divide ffn=", Str(model.ffn), of_model}));
  }
  if (layout.schedule == PipelineSchedule::kInterleavedOneFOneB && layout.pp == 1) {
    return fail(
        "schedule=interleaved needs pp > 1: it interleaves the model chunks of pipeline "
        "stages");
  }
  const int64_t chunks = int64_t{layout.pp} * layout.virtual_stages;
  // Stages and chunks may be unequal (LayersOfChunk), each with one layer at least: torchtitan
  // splits so (layout.h says where its split differs), and Megatron-LM counting the embedding
  // and the loss as layers (account_for_embedding_in_pipeline_split and _loss_: Llama 3.1 405B's
  // 126 layers over 8 x 8 chunks, one on the first and the last, two elsewhere) where
  // pp x virtual_stages divides the layers + 2; other splits Megatron-LM takes only as an
  // explicit pipeline_model_parallel_layout. Not checked per framework.
  if (layout.virtual_stages > 1 && chunks > model.layers) {
    return fail(StrCat({"pp*virtual_stages = ", Str(chunks), " exceeds layers=", Str(model.layers),
                        ": every chunk needs a layer", of_model}));
  }
  if (layout.pp > model.layers) {
    return fail(StrCat({"pp=", Str(layout.pp), " exceeds layers=", Str(model.layers),
                        ": every stage needs a layer", of_model}));
  }
  if (layout.pp > 1 && layout.microbatches == 0) {
    return fail(
        StrCat({"pp=", Str(layout.pp),
                " needs the microbatches per step: microbatches=N, or mbs=N sequences per "
                "microbatch (Megatron-LM's --micro-batch-size; the batch gives the count)"}));
  }
  const int microbatches = layout.microbatch_count();
  const int seq_shards = layout.sequence_shards();
  const std::string data_axes = seq_shards > 1
                                    ? StrCat({"dp*fsdp/seq_shards=", Str(layout.batch_shards())})
                                    : StrCat({"dp*fsdp=", Str(layout.data_shards())});
  if (seq_shards > 1) {
    const std::string shards = StrCat({"seq_shards=", Str(seq_shards)});
    if (layout.data_shards() % seq_shards != 0 ||
        (layout.fsdp % seq_shards != 0 && layout.dp % seq_shards != 0)) {
      return fail(
          StrCat({shards, " (each sequence split over that many data chips) must divide fsdp=",
                  Str(layout.fsdp), " or dp=", Str(layout.dp)}));
    }
    if (layout.cp > 1) {
      return fail(StrCat({shards, " does not combine with cp=", Str(layout.cp),
                          ": dp*fsdp = ", Str(layout.data_shards()), " must split the ",
                          Str(batch.sequences), " sequences whole"}));
    }
    if (layout.ep > 1 || model.moe()) {
      return fail(StrCat({shards, " does not combine with a model with experts (not modelled): ",
                          "dp*fsdp = ", Str(layout.data_shards()), " must split the ",
                          Str(batch.sequences), " sequences whole"}));
    }
  }
  if (layout.cp_comm != ContextComm::kDefault && layout.context_shards() == 1) {
    return fail(StrCat({"cp_comm=", layout.cp_comm == ContextComm::kRing ? "ring" : "all-gather",
                        " needs chips that split a sequence (cp > 1, or dp*fsdp over more chips "
                        "than the sequences of a microbatch)"}));
  }
  if (layout.micro_batch_size > 0 &&
      int64_t{layout.batch_shards()} * layout.micro_batch_size * microbatches != batch.sequences) {
    return fail(StrCat({"mbs=", Str(layout.micro_batch_size), " x ", data_axes,
                        " x microbatches=", Str(microbatches), " must equal the batch of ",
                        Str(batch.sequences), " sequences"}));
  }
  if (layout.schedule == PipelineSchedule::kInterleavedOneFOneB && microbatches % layout.pp != 0) {
    // Megatron's interleaved schedule runs microbatches in groups of pp (Narayanan et al. 2021,
    // sec. 2.2.2; megatron/core/pipeline_parallel/schedules.py asserts it).
    return fail(StrCat({"schedule=interleaved needs microbatches=", Str(microbatches),
                        " to be a multiple of pp=", Str(layout.pp)}));
  }
  if (batch.sequences < 1 || batch.seq < 1) {
    return fail(StrCat({"batch must have >= 1 sequence of >= 1 token (got ", Str(batch.sequences),
                        " x ", Str(batch.seq), ")"}));
  }
  // Each layer runs about 36 ops per microbatch (forward, backward, their collectives); the
  // schedule is built before it is simulated, so its size is bounded first (~200 B an op).
  constexpr double kOpsPerLayerAndMicrobatch = 36;
  // An MoE layer runs about twice as many (router, permutations, all-to-alls, experts).
  constexpr double kOpsPerMoeLayerAndMicrobatch = 80;
  constexpr double kMaxScheduleOps = 4e6;
  const double ops =
      (kOpsPerLayerAndMicrobatch * static_cast<double>(model.layers - model.MoeLayers()) +
       kOpsPerMoeLayerAndMicrobatch * static_cast<double>(model.MoeLayers())) *
      static_cast<double>(microbatches);
  if (ops > kMaxScheduleOps) {
    char figures[64];
    std::snprintf(figures, sizeof figures, "about %.3g ops, over podsim's limit of %.3g", ops,
                  kMaxScheduleOps);
    return sim::Status::OutOfRange(StrCat(
        {"layout ", layout.ToString(), ": ", Str(model.layers), " layers x ", Str(microbatches),
         " microbatches make a schedule of ", figures, "; use fewer microbatches"}));
  }
  const int64_t split = int64_t{layout.batch_shards()} * microbatches;
  if (batch.sequences % split != 0) {
    return fail(StrCat({"batch of ", Str(batch.sequences), " sequences must be divisible by ",
                        data_axes, " x microbatches=", Str(microbatches)}));
  }
  if (seq_shards > 1 && batch.seq % (2 * int64_t{seq_shards}) != 0) {
    return fail(StrCat({"seq_shards=", Str(seq_shards), " (dp*fsdp = ", Str(layout.data_shards()),
                        " chips share ", Str(batch.sequences / microbatches),
                        batch.sequences / microbatches == 1 ? " sequence" : " sequences",
                        " a microbatch) needs 2*seq_shards = ", Str(2 * int64_t{seq_shards}),
                        " to divide seq=", Str(batch.seq),
                        " (each chip holds two of 2*seq_shards equal chunks of its sequences)"}));
  }
  if (layout.cp > 1 && batch.seq % (2 * int64_t{layout.cp}) != 0) {
    return fail(StrCat({"cp=", Str(layout.cp), " needs 2*cp = ", Str(2 * int64_t{layout.cp}),
                        " to divide seq=", Str(batch.seq),
                        " (each chip holds two of 2*cp equal chunks of every sequence)"}));
  }
  const int context = layout.context_shards();
  if (layout.sp && tp > 1 && (batch.seq / context) % tp != 0) {
    if (context == 1) {
      return fail(StrCat({"sp=1 needs tp=", Str(tp), " to divide seq=", Str(batch.seq)}));
    }
    return fail(StrCat({"sp=1 needs tp=", Str(tp), " to divide the ", Str(batch.seq / context),
                        " tokens of a sequence on each chip (",
                        layout.cp > 1 ? "seq/cp)" : "seq/seq_shards)"}));
  }
  PODSIM_RETURN_IF_ERROR(ValidateExpertAxes(layout, model, fail));
  // order= names mesh axes this layout has (ep and cp only exist where they split something).
  const std::vector<topology::MeshAxis> axes = layout.MeshAxes();
  for (const std::string& name : layout.order) {
    if (std::none_of(axes.begin(), axes.end(),
                     [&](const topology::MeshAxis& axis) { return axis.name == name; })) {
      return fail(StrCat({"order names ", name, ", which this layout has no mesh axis for",
                          name == "ep" && layout.ep_spans_cp()
                              ? StrCat({" (ep takes all cp=", Str(layout.cp),
                                        " of its data chips, and none of dp's or fsdp's)"})
                              : std::string()}));
    }
  }
  return sim::Status::Ok();
}

ShardShape ShapeOf(const Layout& layout, const ModelSpec& model, const BatchSpec& batch) {
  ShardShape s;
  const int64_t tp = layout.tp;
  s.microbatch_sequences =
      batch.sequences / (int64_t{layout.batch_shards()} * layout.microbatch_count());
  s.seq = batch.seq;
  s.tokens = s.microbatch_sequences * batch.seq / layout.context_shards();
  s.sp_tokens = layout.sp ? s.tokens / tp : s.tokens;
  s.heads = model.heads / tp;
  s.kv_heads = model.kv_heads % tp == 0 ? model.kv_heads / tp : 1;
  s.ffn = model.ffn / tp;
  s.vocab = (model.vocab + tp - 1) / tp;
  for (int stage = 0; stage < layout.pp; ++stage) {
    s.layers_per_stage = std::max(s.layers_per_stage, LayersOfStage(layout, model, stage));
  }
  const int64_t chunks = int64_t{layout.pp} * layout.virtual_stages;
  s.layers_per_chunk = (model.layers + chunks - 1) / chunks;
  PODSIM_CHECK(s.microbatch_sequences >= 1 && s.layers_per_chunk >= 1)
      << "ShapeOf on an unvalidated layout " << layout.ToString();
  return s;
}

}  // namespace podsim::workloads
