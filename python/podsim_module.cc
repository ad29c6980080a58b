// _podsim: the C++ half of the Python package (podsim/__init__.py is the other half).
//
// Commands run through the command line's own definitions (cli::RunMain), so flags, checks,
// messages and JSON are the CLI's; the parsers give the System, Model and Layout value objects
// what the library read. Every function releases the GIL while the library works and touches no
// Python object meanwhile. Errors from the parsers are ValueError with the library's message.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/main_command.h"
#include "sim/status.h"
#include "topology/chip_spec.h"
#include "topology/fabric.h"
#include "topology/system.h"
#include "workloads/inference_ops.h"
#include "workloads/layout.h"
#include "workloads/model_spec.h"

namespace py = pybind11;

namespace podsim::python {
namespace {

// `podsim ARGS...` with its stdout and stderr captured.
std::tuple<int, std::string, std::string> Run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = 0;
  {
    py::gil_scoped_release release;
    std::vector<const char*> argv{"podsim"};
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    code = cli::RunMain(static_cast<int>(argv.size()), argv.data(), out, err);
  }
  return {code, out.str(), err.str()};
}

// What `parse(text)` returns, parsed without the GIL; ValueError with its message on failure.
template <typename Parse>
auto ParseOrThrow(Parse parse, const std::string& text) {
  auto parsed = [&] {
    py::gil_scoped_release release;
    return parse(text);
  }();
  if (!parsed.ok()) throw py::value_error(parsed.status().message());
  return std::move(parsed).value();
}

std::string_view SystemKindName(topology::SystemKind kind) {
  switch (kind) {
    case topology::SystemKind::kTpu:
      return "tpu";
    case topology::SystemKind::kGpu:
      return "gpu";
    case topology::SystemKind::kRing:
      return "ring";
    case topology::SystemKind::kTorus:
      return "torus";
    case topology::SystemKind::kSwitch:
      return "switch";
  }
  return "";
}

std::string_view ChipFamilyName(topology::ChipFamily family) {
  switch (family) {
    case topology::ChipFamily::kTpu:
      return "tpu";
    case topology::ChipFamily::kGpu:
      return "gpu";
    case topology::ChipFamily::kGeneric:
      return "generic";
  }
  return "";
}

py::dict ChipDict(const topology::ChipSpec& chip) {
  py::dict d;
  d["name"] = chip.name;
  d["family"] = ChipFamilyName(chip.family);
  d["bf16_flops_per_s"] = chip.bf16_flops_per_s;
  d["int8_flops_per_s"] = chip.int8_flops_per_s;
  d["fp8_flops_per_s"] = chip.fp8_flops_per_s;
  d["fp8_gemm_tn_only"] = chip.fp8_gemm_tn_only;
  d["fp8_block_scaled"] = chip.fp8_block_scaled;
  d["hbm_bytes"] = chip.hbm_bytes;
  d["hbm_bytes_per_s"] = chip.hbm_bytes_per_s;
  d["vmem_bytes"] = chip.vmem_bytes;
  d["scale_up_ports"] = chip.scale_up_ports;
  d["scale_up_link_bytes_per_s"] = chip.scale_up_link_bytes_per_s;
  d["pcie_bytes_per_s"] = chip.pcie_bytes_per_s;
  d["scale_out_bytes_per_s"] = chip.scale_out_bytes_per_s;
  d["hop_latency_s"] = chip.hop_latency.ToSeconds();
  d["chips_per_host"] = chip.chips_per_host;
  d["host_shape"] = chip.host_shape;
  return d;
}

// topology::ParseSystem: the chip and the shape of the fabric it built.
py::dict ParseSystem(const std::string& text) {
  const topology::System system = ParseOrThrow(topology::ParseSystem, text);
  const topology::Fabric& fabric = system.fabric;
  py::dict d;
  d["name"] = system.name;
  d["kind"] = SystemKindName(system.kind);
  d["chips"] = fabric.chip_count();
  d["vertices"] = fabric.vertex_count();
  d["links"] = fabric.link_count();
  d["chip"] = ChipDict(system.chip);
  if (const topology::TorusLayout* torus = fabric.torus()) {
    d["axes"] = fabric.AxisNames();
    d["shape"] = torus->shape;
    d["wraps"] = torus->wraps;
    d["slices"] = torus->slices;
  }
  if (const topology::GpuLayout* gpu = fabric.gpu()) {
    d["gpus_per_node"] = gpu->gpus_per_node;
    d["nodes"] = gpu->nodes;
    d["switch_levels"] = gpu->levels;
    d["oversubscription"] = gpu->oversubscription;
  }
  return d;
}

// workloads::ParseModel: the dimensions and the parameter counts of model_spec.h.
py::dict ParseModel(const std::string& text) {
  const workloads::ModelSpec model = ParseOrThrow(workloads::ParseModel, text);
  py::dict d;
  d["name"] = model.name;
  d["layers"] = model.layers;
  d["d_model"] = model.d_model;
  d["ffn"] = model.ffn;
  d["heads"] = model.heads;
  d["kv_heads"] = model.kv_heads;
  d["head_dim"] = model.head_dim;
  d["vocab"] = model.vocab;
  d["gated_mlp"] = model.gated_mlp;
  d["tied_embeddings"] = model.tied_embeddings;
  d["linear_biases"] = model.linear_biases;
  d["norm"] = model.norm == workloads::NormKind::kRms ? "rms" : "layer";
  d["learned_positions"] = model.learned_positions;
  d["dropout"] = model.dropout;
  d["params"] = model.TotalParams();
  d["params_per_layer"] = model.ParamsPerLayer();  // A dense layer's.
  d["experts"] = model.experts;
  d["top_k"] = model.top_k;
  d["expert_ffn"] = model.expert_ffn;
  d["shared_ffn"] = model.shared_ffn;
  d["dense_layers"] = model.dense_layers;
  d["moe_params_per_layer"] =
      model.moe() ? py::object(py::int_(model.MoeParamsPerLayer())) : py::none();
  d["q_lora"] = model.q_lora;
  d["kv_lora"] = model.kv_lora;
  d["rope_dim"] = model.rope_dim;
  d["v_head_dim"] = model.v_head_dim;
  d["embedding_params"] = model.EmbeddingParams();
  d["unembedding_params"] = model.UnembeddingParams();
  d["matmul_params"] = model.MatmulParams();
  return d;
}

// Layout's counts that 0 marks as not stated.
py::object StatedOrNone(int count) { return count > 0 ? py::object(py::int_(count)) : py::none(); }

// workloads::ParseLayout: the axes and options as parsed (not yet checked against a model).
py::dict ParseLayout(const std::string& text) {
  const workloads::Layout layout = ParseOrThrow(workloads::ParseLayout, text);
  py::dict d;
  d["text"] = layout.ToString();
  d["dp"] = layout.dp;
  d["fsdp"] = layout.fsdp;
  d["tp"] = layout.tp;
  d["pp"] = layout.pp;
  d["sp"] = layout.sp;
  d["cp"] = layout.cp;
  d["ep"] = layout.ep;
  d["etp"] = StatedOrNone(layout.etp);
  d["chips"] = layout.chips();
  d["microbatches"] = StatedOrNone(layout.microbatches);
  d["micro_batch_size"] = StatedOrNone(layout.micro_batch_size);
  d["schedule"] = workloads::PipelineScheduleName(layout.schedule);
  d["virtual_stages"] = layout.virtual_stages;
  d["order"] = layout.order;
  return d;
}

// workloads::ParseInferenceLayout: the axes as parsed.
py::dict ParseInferenceLayout(const std::string& text) {
  const workloads::InferenceLayout layout = ParseOrThrow(workloads::ParseInferenceLayout, text);
  py::dict d;
  d["text"] = layout.ToString();
  d["tp"] = layout.tp;
  d["tp2"] = layout.tp2;
  d["dp"] = layout.dp;
  d["kv_shard"] = workloads::KvShardName(layout.kv_shard);
  d["chips"] = layout.chips();
  return d;
}

}  // namespace
}  // namespace podsim::python

PYBIND11_MODULE(_podsim, m) {
  m.doc() = "podsim's C++ half; use the podsim package (docs/python.md).";
  m.def("run", &podsim::python::Run, py::arg("args"),
        "Runs `podsim ARGS...`; returns (exit code, stdout, stderr).");
  m.def("parse_system", &podsim::python::ParseSystem, py::arg("text"),
        "topology::ParseSystem as a dict; ValueError with its message.");
  m.def("parse_model", &podsim::python::ParseModel, py::arg("text"),
        "workloads::ParseModel as a dict; ValueError with its message.");
  m.def("parse_layout", &podsim::python::ParseLayout, py::arg("text"),
        "workloads::ParseLayout as a dict; ValueError with its message.");
  m.def("parse_inference_layout", &podsim::python::ParseInferenceLayout, py::arg("text"),
        "workloads::ParseInferenceLayout as a dict; ValueError with its message.");
}
