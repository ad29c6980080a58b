#include "workloads/model_spec.h"

#include <cstdio>
#include <map>
#include <string>

#include "topology/names.h"

namespace podsim::workloads {
namespace {

using topology::StrCat;

ModelSpec Llama(std::string name, int64_t layers, int64_t d_model, int64_t ffn, int64_t heads,
                int64_t kv_heads, int64_t vocab) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.d_model = d_model;
  m.ffn = ffn;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = 128;  // Every LLaMA 2/3 model: d_model / heads = 128.
  m.vocab = vocab;
  m.gated_mlp = true;  // SwiGLU.
  m.tied_embeddings = false;
  m.linear_biases = false;
  m.norm = NormKind::kRms;
  return m;
}

std::vector<ModelSpec> Presets() {
  std::vector<ModelSpec> presets;
  // LLaMA-2 13B: Touvron et al. 2023 ("Llama 2"), as quoted in book-cases.yaml TR12 and I4:
  // L=40, D=5120, F=13824, N=K=40, H=128, V=32000.
  presets.push_back(Llama("llama2-13b", 40, 5120, 13824, 40, 40, 32000));
  presets.back().source = "Touvron et al. 2023, Llama 2; docs/reference/book-cases.yaml TR12, I4";
  // LLaMA-3 8B: Dubey et al. 2024 ("The Llama 3 Herd of Models", Table 3) and the model card's
  // config.json: L=32, D=4096, F=14336, N=32, K=8, V=128256. Not in the reference files.
  presets.push_back(Llama("llama3-8b", 32, 4096, 14336, 32, 8, 128256));
  presets.back().source =
      "Dubey et al. 2024, The Llama 3 Herd of Models, Table 3; Meta-Llama-3-8B config.json";
  // LLaMA-3 70B: book-cases.yaml AT1 (Ch6): L=80, D=8192, F=3.5*8192=28672, N=64, K=8, H=128,
  // V=128256.
  presets.push_back(Llama("llama3-70b", 80, 8192, 28672, 64, 8, 128256));
  presets.back().source = "How to Scale Your Model Ch6; docs/reference/book-cases.yaml AT1";
  // LLaMA-3 405B: Dubey et al. 2024, Table 3: L=126, D=16384, F=53248, N=128, K=8, V=128256.
  presets.push_back(Llama("llama3-405b", 126, 16384, 53248, 128, 8, 128256));
  presets.back().source = "Dubey et al. 2024, The Llama 3 Herd of Models, Table 3";
  // GPT-3 175B: Brown et al. 2020 Table 2.1 (L=96, D=12288, 96 heads of 128, F=4D, context 2048,
  // learned positions, LayerNorm, biases, GeLU, dropout), with Megatron's padded vocabulary
  // V=51,200 and tied embeddings as in measured.md V1/V3 (Narayanan 2021, Korthikanti 2022),
  // whose runs this preset is validated against. (The BPE vocabulary itself is 50,257.)
  ModelSpec gpt3;
  gpt3.name = "gpt3-175b";
  gpt3.source =
      "Brown et al. 2020, Table 2.1; Megatron's padded vocabulary and tied embeddings as in "
      "docs/reference/measured.md V1, V3";
  gpt3.layers = 96;
  gpt3.d_model = 12288;
  gpt3.ffn = 4 * 12288;
  gpt3.heads = 96;
  gpt3.kv_heads = 96;
  gpt3.head_dim = 128;
  gpt3.vocab = 51200;
  gpt3.gated_mlp = false;
  gpt3.tied_embeddings = true;
  gpt3.linear_biases = true;
  gpt3.norm = NormKind::kLayer;
  gpt3.learned_positions = 2048;
  gpt3.dropout = true;
  presets.push_back(gpt3);
  return presets;
}

int64_t NormParams(const ModelSpec& m) {
  return m.norm == NormKind::kLayer ? 2 * m.d_model : m.d_model;
}

constexpr std::string_view kCustomGrammar =
    "custom:layers=..,d_model=..,ffn=..,heads=..,kv_heads=..,head_dim=..,vocab=..[,gated=true|"
    "false]"
    "[,tied=true|false][,bias=true|false][,norm=rms|layer][,positions=N][,dropout=true|false]";

// Largest accepted size of any one dimension: far above any real model (405B has D=16384,
// V=128256), small enough that products of a few stay exact in int64 and double.
constexpr int64_t kMaxDimension = int64_t{1} << 24;

sim::StatusOr<ModelSpec> ParseCustom(std::string_view text, std::string_view body) {
  static const std::vector<std::string_view> kKeys = {
      "layers", "d_model", "ffn",  "heads", "kv_heads",  "head_dim", "vocab",
      "gated",  "tied",    "bias", "norm",  "positions", "dropout"};
  static const std::vector<std::string_view> kRequired = {"layers",   "d_model",  "ffn",  "heads",
                                                          "kv_heads", "head_dim", "vocab"};
  const std::string where = StrCat({"model '", text, "'"});
  PODSIM_ASSIGN_OR_RETURN(auto pairs, topology::ParseKeyValues(body, kKeys, where, kCustomGrammar));
  std::map<std::string, std::string, std::less<>> values;
  for (const auto& [key, value] : pairs) values.emplace(std::string(key), std::string(value));
  for (std::string_view key : kRequired) {
    if (!values.contains(key)) {
      return sim::Status::InvalidArgument(
          StrCat({where, ": missing key '", key, "'; form: ", kCustomGrammar}));
    }
  }
  auto size = [&](std::string_view key, int64_t min, int64_t* out) -> sim::Status {
    auto it = values.find(key);
    if (it == values.end()) return sim::Status::Ok();
    std::optional<int64_t> v = topology::ParseCount(it->second, kMaxDimension);
    if (!v || *v < min) {
      return sim::Status::InvalidArgument(
          StrCat({where, ": ", key, " must be an integer in [", std::to_string(min), ", ",
                  std::to_string(kMaxDimension), "] (got '", it->second, "')"}));
    }
    *out = *v;
    return sim::Status::Ok();
  };
  auto flag = [&](std::string_view key, bool* out) -> sim::Status {
    auto it = values.find(key);
    if (it == values.end()) return sim::Status::Ok();
    const std::optional<bool> value = topology::ParseBool(it->second);
    if (!value) {
      return sim::Status::InvalidArgument(
          StrCat({where, ": ", key, " must be true, false, 1 or 0 (got '", it->second, "')"}));
    }
    *out = *value;
    return sim::Status::Ok();
  };
  ModelSpec m;
  m.name = std::string(text);
  PODSIM_RETURN_IF_ERROR(size("layers", 1, &m.layers));
  PODSIM_RETURN_IF_ERROR(size("d_model", 1, &m.d_model));
  PODSIM_RETURN_IF_ERROR(size("ffn", 1, &m.ffn));
  PODSIM_RETURN_IF_ERROR(size("heads", 1, &m.heads));
  PODSIM_RETURN_IF_ERROR(size("kv_heads", 1, &m.kv_heads));
  PODSIM_RETURN_IF_ERROR(size("head_dim", 1, &m.head_dim));
  PODSIM_RETURN_IF_ERROR(size("vocab", 1, &m.vocab));
  PODSIM_RETURN_IF_ERROR(size("positions", 0, &m.learned_positions));
  PODSIM_RETURN_IF_ERROR(flag("gated", &m.gated_mlp));
  PODSIM_RETURN_IF_ERROR(flag("tied", &m.tied_embeddings));
  PODSIM_RETURN_IF_ERROR(flag("bias", &m.linear_biases));
  PODSIM_RETURN_IF_ERROR(flag("dropout", &m.dropout));
  if (auto it = values.find("norm"); it != values.end()) {
    if (it->second == "rms") {
      m.norm = NormKind::kRms;
    } else if (it->second == "layer") {
      m.norm = NormKind::kLayer;
    } else {
      return sim::Status::InvalidArgument(
          StrCat({where, ": norm must be 'rms' or 'layer' (got '", it->second, "')"}));
    }
  }
  PODSIM_RETURN_IF_ERROR(ValidateModel(m));
  return m;
}

}  // namespace

int64_t ModelSpec::AttentionMatmulParamsPerLayer() const {
  return 2 * d_model * (q_dim() + kv_dim());
}

int64_t ModelSpec::MlpMatmulParamsPerLayer() const { return (gated_mlp ? 3 : 2) * d_model * ffn; }

int64_t ModelSpec::SmallParamsPerLayer() const {
  int64_t params = 2 * NormParams(*this);  // Before attention and before the MLP.
  if (linear_biases) {
    params += q_dim() + 2 * kv_dim() + d_model;     // QKV and output projection.
    params += (gated_mlp ? 2 : 1) * ffn + d_model;  // MLP in (gate, up) and out.
  }
  return params;
}

int64_t ModelSpec::ParamsPerLayer() const {
  return AttentionMatmulParamsPerLayer() + MlpMatmulParamsPerLayer() + SmallParamsPerLayer();
}

int64_t ModelSpec::EmbeddingParams() const { return vocab * d_model + learned_positions * d_model; }

int64_t ModelSpec::UnembeddingParams() const { return tied_embeddings ? 0 : vocab * d_model; }

int64_t ModelSpec::FinalNormParams() const { return NormParams(*this); }

int64_t ModelSpec::TotalParams() const {
  return layers * ParamsPerLayer() + EmbeddingParams() + UnembeddingParams() + FinalNormParams();
}

int64_t ModelSpec::MatmulParams() const {
  return layers * (AttentionMatmulParamsPerLayer() + MlpMatmulParamsPerLayer()) + vocab * d_model;
}

double ModelSpec::AttentionForwardFlopsPerToken(int64_t seq, AttentionCount count) const {
  // QK^T and PV: 2 FLOPs per multiply-add, H per pair, N heads, twice (scores and values).
  const double pairs_per_token = count == AttentionCount::kFull
                                     ? static_cast<double>(seq)
                                     : (static_cast<double>(seq) + 1) / 2;
  return 4.0 * static_cast<double>(layers) * static_cast<double>(q_dim()) * pairs_per_token;
}

double ModelSpec::ForwardFlopsPerToken(int64_t seq, AttentionCount count) const {
  return 2.0 * static_cast<double>(MatmulParams()) + AttentionForwardFlopsPerToken(seq, count);
}

double ModelSpec::TrainingFlopsPerToken(int64_t seq, AttentionCount count) const {
  // Backward = 2x forward: one input-gradient and one weight-gradient matmul per forward matmul
  // (formulas.md 2.4: "Forward 2NPM, backward 4NPM").
  return 3.0 * ForwardFlopsPerToken(seq, count);
}

double ModelSpec::KvCacheBytesPerToken(double bytes_per_element) const {
  return 2.0 * static_cast<double>(layers) * static_cast<double>(kv_dim()) * bytes_per_element;
}

sim::Status ValidateModel(const ModelSpec& m) {
  const std::string where = StrCat({"model '", m.name, "'"});
  const std::pair<std::string_view, int64_t> sizes[] = {
      {"layers", m.layers},     {"d_model", m.d_model},   {"ffn", m.ffn},    {"heads", m.heads},
      {"kv_heads", m.kv_heads}, {"head_dim", m.head_dim}, {"vocab", m.vocab}};
  for (const auto& [field, value] : sizes) {
    if (value < 1 || value > kMaxDimension) {
      return sim::Status::InvalidArgument(
          StrCat({where, ": ", field, " must be in [1, ", std::to_string(kMaxDimension), "] (got ",
                  std::to_string(value), ")"}));
    }
  }
  // Every parameter count is int64: bound the largest products (in double, which cannot
  // overflow) far above any real model (405B) and far below 2^63.
  const double d = static_cast<double>(m.d_model);
  const double attention = 2 * d * static_cast<double>(m.heads + m.kv_heads) * m.head_dim;
  const double mlp = 3 * d * static_cast<double>(m.ffn);
  const double total = static_cast<double>(m.layers) * (attention + mlp + 4 * d) +
                       2 * d * static_cast<double>(m.vocab);
  constexpr double kMaxParams = 1e15;
  if (total > kMaxParams) {
    char figure[32];
    std::snprintf(figure, sizeof figure, "%.3g", total);
    return sim::Status::OutOfRange(
        StrCat({where, ": about ", figure, " parameters, over podsim's limit of 1e15"}));
  }
  // Deeper than any published model (405B has 126 layers) by far; bounds the ops of a schedule.
  constexpr int64_t kMaxLayers = 4096;
  if (m.layers > kMaxLayers) {
    return sim::Status::OutOfRange(
        StrCat({where, ": layers must be at most ", std::to_string(kMaxLayers), " (got ",
                std::to_string(m.layers), ")"}));
  }
  if (m.heads % m.kv_heads != 0) {
    return sim::Status::InvalidArgument(
        StrCat({where, ": kv_heads must divide heads (got heads=", std::to_string(m.heads),
                ", kv_heads=", std::to_string(m.kv_heads), ")"}));
  }
  if (m.learned_positions < 0) {
    return sim::Status::InvalidArgument(StrCat({where, ": positions must be >= 0"}));
  }
  return sim::Status::Ok();
}

const std::vector<std::string_view>& ModelPresetNames() {
  static const std::vector<std::string_view> kNames = {"llama2-13b", "llama3-8b", "llama3-70b",
                                                       "llama3-405b", "gpt3-175b"};
  return kNames;
}

sim::StatusOr<ModelSpec> ParseModel(std::string_view text) {
  constexpr std::string_view kCustom = "custom:";
  if (text.starts_with(kCustom)) return ParseCustom(text, text.substr(kCustom.size()));
  for (ModelSpec& preset : Presets()) {
    if (preset.name == text) return std::move(preset);
  }
  std::string known;
  for (std::string_view name : ModelPresetNames()) {
    known += known.empty() ? "" : ", ";
    known += name;
  }
  return sim::Status::NotFound(
      StrCat({"unknown model '", text, "'", topology::DidYouMean(text, ModelPresetNames()),
              "; known: ", known, ", or ", kCustomGrammar}));
}

}  // namespace podsim::workloads
