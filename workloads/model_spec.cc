#include "workloads/model_spec.h"

#include <algorithm>
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
  // Mixtral 8x7B: Jiang et al. 2024 ("Mixtral of Experts", Table 1) and Mixtral-8x7B-v0.1's
  // config.json: L=32, D=4096, 8 experts of F=14336, top 2, N=32, K=8, V=32000; 46.7B
  // parameters, 12.9B active.
  ModelSpec mixtral = Llama("mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000);
  mixtral.source = "Jiang et al. 2024, Mixtral of Experts, Table 1; Mixtral-8x7B-v0.1 config.json";
  mixtral.experts = 8;
  mixtral.top_k = 2;
  mixtral.expert_ffn = 14336;
  presets.push_back(mixtral);
  // Mixtral 8x22B: Mixtral-8x22B-v0.1's config.json (Mistral AI, 2024): L=56, D=6144, 8 experts
  // of F=16384, top 2, N=48, K=8, V=32000; 141B parameters, 39B active
  // (mistral.ai/news/mixtral-8x22b).
  ModelSpec mixtral22 = Llama("mixtral-8x22b", 56, 6144, 16384, 48, 8, 32000);
  mixtral22.source =
      "Mixtral-8x22B-v0.1 config.json; mistral.ai/news/mixtral-8x22b (141B, 39B active)";
  mixtral22.experts = 8;
  mixtral22.top_k = 2;
  mixtral22.expert_ffn = 16384;
  presets.push_back(mixtral22);
  // Qwen2-57B-A14B: Yang et al. 2024 ("Qwen2 Technical Report", Table 1) and its config.json:
  // L=28, D=3584, N=28, K=4, V=151936, 64 experts of F=2560, top 8, shared experts of total
  // width 20480 (dense MLP width 18944, unused: every layer is MoE). Not counted: the biases of
  // Q, K, V (4,608 per layer) and the shared experts' scalar gate (3,584 per layer), under 0.01%.
  ModelSpec qwen = Llama("qwen2-57b-a14b", 28, 3584, 18944, 28, 4, 151936);
  qwen.source = "Yang et al. 2024, Qwen2 Technical Report, Table 1; Qwen2-57B-A14B config.json";
  qwen.experts = 64;
  qwen.top_k = 8;
  qwen.expert_ffn = 2560;
  qwen.shared_ffn = 20480;
  presets.push_back(qwen);
  // Qwen3-30B-A3B (Qwen Team 2025, Qwen3 Technical Report, arXiv 2505.09388, Table 2, and its
  // config.json): L=48, D=2048, 32 query heads and 4 kv heads of dimension 128, V=151936,
  // untied; every layer MoE with 128 experts of F=768, top 8, no shared expert (the config's
  // dense width 6144 is unused). 30.5B parameters, 3.3B active. Not modelled: the RMSNorm of each
  // head's queries and keys (QK-norm, 2 x 128 weights a layer, and its kernels).
  ModelSpec qwen3 = Llama("qwen3-30b-a3b", 48, 2048, 6144, 32, 4, 151936);
  qwen3.source = "Qwen Team 2025, Qwen3 Technical Report (arXiv 2505.09388) Table 2; config.json";
  qwen3.head_dim = 128;
  qwen3.experts = 128;
  qwen3.top_k = 8;
  qwen3.expert_ffn = 768;
  presets.push_back(qwen3);
  // Qwen3-235B-A22B (the same report's Table 2 and its config.json): L=94, D=4096, 64 query heads
  // and 4 kv heads of dimension 128, V=151936, untied; every layer MoE with 128 experts of
  // F=1536, top 8, no shared expert (the dense width 12288 unused). 235B parameters, 22B active.
  // Not modelled, as above: QK-norm.
  ModelSpec qwen3_235 = Llama("qwen3-235b-a22b", 94, 4096, 12288, 64, 4, 151936);
  qwen3_235.source =
      "Qwen Team 2025, Qwen3 Technical Report (arXiv 2505.09388) Table 2; config.json";
  qwen3_235.head_dim = 128;
  qwen3_235.experts = 128;
  qwen3_235.top_k = 8;
  qwen3_235.expert_ffn = 1536;
  presets.push_back(qwen3_235);
  // DeepSeek-V2 (DeepSeek-AI 2024, arXiv 2405.04434, sec. 3.1.2 and its config.json): L=60,
  // D=5120, 128 heads of MLA (q_lora 1536, kv_lora 512, 128 + 64 rotary query/key dims, values
  // 128), V=102400; the first layer dense (F=12288), then 160 routed experts of F=1536, top 6,
  // and 2 shared experts (3072); 236B parameters, 21B active.
  ModelSpec v2 = Llama("deepseek-v2", 60, 5120, 12288, 128, 128, 102400);
  v2.source = "DeepSeek-AI 2024, DeepSeek-V2 (arXiv 2405.04434) sec. 3.1.2; config.json";
  v2.q_lora = 1536;
  v2.kv_lora = 512;
  v2.rope_dim = 64;
  v2.v_head_dim = 128;
  v2.experts = 160;
  v2.top_k = 6;
  v2.expert_ffn = 1536;
  v2.shared_ffn = 2 * 1536;
  v2.dense_layers = 1;
  presets.push_back(v2);
  // DeepSeek-V3 (DeepSeek-AI 2024, arXiv 2412.19437, sec. 4.2 and its config.json): L=61,
  // D=7168, 128 heads of MLA (q_lora 1536, kv_lora 512, 128 + 64, values 128), V=129280; the
  // first 3 layers dense (F=18432), then 256 routed experts of F=2048, top 8, one shared expert;
  // 671B parameters, 37B active. Not counted: the multi-token-prediction module (14B more).
  ModelSpec v3 = Llama("deepseek-v3", 61, 7168, 18432, 128, 128, 129280);
  v3.source = "DeepSeek-AI 2024, DeepSeek-V3 (arXiv 2412.19437) sec. 4.2; config.json";
  v3.q_lora = 1536;
  v3.kv_lora = 512;
  v3.rope_dim = 64;
  v3.v_head_dim = 128;
  v3.experts = 256;
  v3.top_k = 8;
  v3.expert_ffn = 2048;
  v3.shared_ffn = 2048;
  v3.dense_layers = 3;
  presets.push_back(v3);
  return presets;
}

int64_t NormParams(const ModelSpec& m) {
  return m.norm == NormKind::kLayer ? 2 * m.d_model : m.d_model;
}

constexpr std::string_view kCustomGrammar =
    "custom:layers=..,d_model=..,ffn=..,heads=..,kv_heads=..,head_dim=..,vocab=..[,gated=true|"
    "false]"
    "[,tied=true|false][,bias=true|false][,norm=rms|layer][,positions=N][,dropout=true|false]"
    "[,experts=E,top_k=K[,expert_ffn=F][,shared_ffn=F][,dense_layers=N]]"
    "[,kv_lora=..,rope_dim=..,v_head_dim=..[,q_lora=..]]";

// Largest accepted size of any one dimension: far above any real model (405B has D=16384,
// V=128256), small enough that products of a few stay exact in int64 and double.
constexpr int64_t kMaxDimension = int64_t{1} << 24;

// The keys of `body` over `base` (a preset, or nothing: then the sizes are required).
sim::StatusOr<ModelSpec> ParseCustom(std::string_view text, std::string_view body,
                                     const ModelSpec* base) {
  static const std::vector<std::string_view> kKeys = {
      "layers",  "d_model", "ffn",      "heads",      "kv_heads",   "head_dim",
      "vocab",   "gated",   "tied",     "bias",       "norm",       "positions",
      "dropout", "experts", "top_k",    "expert_ffn", "shared_ffn", "dense_layers",
      "q_lora",  "kv_lora", "rope_dim", "v_head_dim"};
  static const std::vector<std::string_view> kRequired = {"layers",   "d_model",  "ffn",  "heads",
                                                          "kv_heads", "head_dim", "vocab"};
  const std::string where = StrCat({"model '", text, "'"});
  PODSIM_ASSIGN_OR_RETURN(auto pairs, topology::ParseKeyValues(body, kKeys, where, kCustomGrammar));
  std::map<std::string, std::string, std::less<>> values;
  for (const auto& [key, value] : pairs) values.emplace(std::string(key), std::string(value));
  for (std::string_view key : kRequired) {
    if (base == nullptr && !values.contains(key)) {
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
  ModelSpec m = base != nullptr ? *base : ModelSpec{};
  m.name = std::string(text);
  if (base != nullptr) m.source = StrCat({base->source, "; overridden: ", body});
  PODSIM_RETURN_IF_ERROR(size("layers", 1, &m.layers));
  PODSIM_RETURN_IF_ERROR(size("d_model", 1, &m.d_model));
  PODSIM_RETURN_IF_ERROR(size("ffn", 1, &m.ffn));
  PODSIM_RETURN_IF_ERROR(size("heads", 1, &m.heads));
  PODSIM_RETURN_IF_ERROR(size("kv_heads", 1, &m.kv_heads));
  PODSIM_RETURN_IF_ERROR(size("head_dim", 1, &m.head_dim));
  PODSIM_RETURN_IF_ERROR(size("vocab", 1, &m.vocab));
  PODSIM_RETURN_IF_ERROR(size("positions", 0, &m.learned_positions));
  PODSIM_RETURN_IF_ERROR(size("experts", 0, &m.experts));
  PODSIM_RETURN_IF_ERROR(size("top_k", 0, &m.top_k));
  PODSIM_RETURN_IF_ERROR(size("shared_ffn", 0, &m.shared_ffn));
  PODSIM_RETURN_IF_ERROR(size("dense_layers", 0, &m.dense_layers));
  PODSIM_RETURN_IF_ERROR(size("q_lora", 0, &m.q_lora));
  PODSIM_RETURN_IF_ERROR(size("kv_lora", 0, &m.kv_lora));
  PODSIM_RETURN_IF_ERROR(size("rope_dim", 0, &m.rope_dim));
  PODSIM_RETURN_IF_ERROR(size("v_head_dim", 0, &m.v_head_dim));
  // A routed expert is as wide as the dense MLP unless stated (Mixtral).
  if (m.experts > 0 && m.expert_ffn == 0 && !values.contains("expert_ffn")) m.expert_ffn = m.ffn;
  PODSIM_RETURN_IF_ERROR(size("expert_ffn", 1, &m.expert_ffn));
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

// The mixture-of-experts fields (model_spec.h ValidateModel).
sim::Status ValidateExperts(const ModelSpec& m, const std::string& where) {
  auto fail = [&](std::string_view what) {
    return sim::Status::InvalidArgument(StrCat({where, ": ", what}));
  };
  if (m.experts == 0) {
    if (m.top_k != 0 || m.expert_ffn != 0 || m.shared_ffn != 0 || m.dense_layers != 0) {
      return fail("top_k, expert_ffn, shared_ffn and dense_layers need experts >= 1");
    }
    return sim::Status::Ok();
  }
  if (m.experts < 0 || m.experts > kMaxDimension) {
    return fail(StrCat({"experts must be in [0, ", std::to_string(kMaxDimension), "] (got ",
                        std::to_string(m.experts), ")"}));
  }
  if (m.top_k < 1 || m.top_k > m.experts) {
    return fail(StrCat({"top_k must be in [1, experts=", std::to_string(m.experts), "] (got ",
                        std::to_string(m.top_k), ")"}));
  }
  if (m.expert_ffn < 1 || m.expert_ffn > kMaxDimension || m.shared_ffn < 0 ||
      m.shared_ffn > kMaxDimension) {
    return fail(StrCat({"expert_ffn must be in [1, ", std::to_string(kMaxDimension),
                        "] and shared_ffn in [0, ", std::to_string(kMaxDimension), "]"}));
  }
  if (m.dense_layers < 0 || m.dense_layers >= m.layers) {
    return fail(StrCat({"dense_layers must be in [0, layers=", std::to_string(m.layers), ") (got ",
                        std::to_string(m.dense_layers), ")"}));
  }
  if (m.linear_biases) return fail("bias=true is not modelled with experts");
  return sim::Status::Ok();
}

// The multi-head latent attention fields (model_spec.h ValidateModel).
sim::Status ValidateLatentAttention(const ModelSpec& m, const std::string& where) {
  auto fail = [&](std::string_view what) {
    return sim::Status::InvalidArgument(StrCat({where, ": ", what}));
  };
  const std::pair<std::string_view, int64_t> fields[] = {{"q_lora", m.q_lora},
                                                         {"kv_lora", m.kv_lora},
                                                         {"rope_dim", m.rope_dim},
                                                         {"v_head_dim", m.v_head_dim}};
  for (const auto& [field, value] : fields) {
    if (value < 0 || value > kMaxDimension) {
      return fail(StrCat({field, " must be in [0, ", std::to_string(kMaxDimension), "] (got ",
                          std::to_string(value), ")"}));
    }
  }
  if (!m.mla()) {
    if (m.q_lora != 0 || m.rope_dim != 0 || m.v_head_dim != 0) {
      return fail("q_lora, rope_dim and v_head_dim need kv_lora >= 1 (latent attention)");
    }
    return sim::Status::Ok();
  }
  if (m.rope_dim < 1 || m.v_head_dim < 1) {
    return fail("latent attention (kv_lora >= 1) needs rope_dim >= 1 and v_head_dim >= 1");
  }
  if (m.kv_heads != m.heads) {
    return fail(StrCat({"latent attention needs kv_heads == heads (got heads=",
                        std::to_string(m.heads), ", kv_heads=", std::to_string(m.kv_heads), ")"}));
  }
  if (m.linear_biases || m.learned_positions > 0) {
    return fail("latent attention is modelled without biases and with rotary positions");
  }
  return sim::Status::Ok();
}

}  // namespace

int64_t ModelSpec::AttentionMatmulParamsPerLayer() const {
  if (!mla()) return 2 * d_model * (q_dim() + kv_dim());
  const int64_t q_down = q_lora > 0 ? d_model * q_lora : 0;
  return q_down + q_input_dim() * heads * qk_head_dim() + d_model * (kv_lora + rope_dim) +
         kv_lora * heads * (head_dim + v_head_dim) + heads * v_head_dim * d_model;
}

int64_t ModelSpec::TpReplicatedParamsPerLayer() const {
  int64_t params = 2 * NormParams(*this);
  if (mla()) params += d_model * (q_lora + kv_lora + rope_dim) + q_lora + kv_lora;
  return params;
}

int64_t ModelSpec::MlpMatmulParamsPerLayer() const { return (gated_mlp ? 3 : 2) * d_model * ffn; }

int64_t ModelSpec::SmallParamsPerLayer() const {
  int64_t params = 2 * NormParams(*this);  // Before attention and before the MLP.
  params += q_lora + kv_lora;              // MLA's latent norms (RMSNorm gains).
  if (linear_biases) {
    params += q_dim() + 2 * kv_dim() + d_model;     // QKV and output projection.
    params += (gated_mlp ? 2 : 1) * ffn + d_model;  // MLP in (gate, up) and out.
  }
  return params;
}

int64_t ModelSpec::ParamsPerLayer() const {
  return AttentionMatmulParamsPerLayer() + MlpMatmulParamsPerLayer() + SmallParamsPerLayer();
}

int64_t ModelSpec::ExpertParams() const { return (gated_mlp ? 3 : 2) * d_model * expert_ffn; }

int64_t ModelSpec::SharedExpertParamsPerLayer() const {
  return (gated_mlp ? 3 : 2) * d_model * shared_ffn;
}

int64_t ModelSpec::MoeParamsPerLayer() const {
  return AttentionMatmulParamsPerLayer() + RouterParamsPerLayer() + experts * ExpertParams() +
         SharedExpertParamsPerLayer() + 2 * NormParams(*this) + q_lora + kv_lora;
}

int64_t ModelSpec::EmbeddingParams() const { return vocab * d_model + learned_positions * d_model; }

int64_t ModelSpec::UnembeddingParams() const { return tied_embeddings ? 0 : vocab * d_model; }

int64_t ModelSpec::FinalNormParams() const { return NormParams(*this); }

int64_t ModelSpec::TotalParams() const {
  return (layers - MoeLayers()) * ParamsPerLayer() + MoeLayers() * MoeParamsPerLayer() +
         EmbeddingParams() + UnembeddingParams() + FinalNormParams();
}

int64_t ModelSpec::MatmulParams() const {
  const int64_t moe_active =
      RouterParamsPerLayer() + top_k * ExpertParams() + SharedExpertParamsPerLayer();
  return layers * AttentionMatmulParamsPerLayer() +
         (layers - MoeLayers()) * MlpMatmulParamsPerLayer() + MoeLayers() * moe_active +
         vocab * d_model;
}

double ModelSpec::AttentionForwardFlopsPerToken(int64_t seq, AttentionCount count) const {
  // QK^T and PV: 2 FLOPs per multiply-add, H per pair, N heads, twice (scores and values).
  const double pairs_per_token = count == AttentionCount::kFull
                                     ? static_cast<double>(seq)
                                     : (static_cast<double>(seq) + 1) / 2;
  // Scores over the query/key dims, values over the value dims (both the head dim but in MLA).
  return 2.0 * static_cast<double>(layers) * static_cast<double>(heads) *
         static_cast<double>(qk_head_dim() + value_head_dim()) * pairs_per_token;
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
  if (mla()) {
    return static_cast<double>(layers) * static_cast<double>(kv_lora + rope_dim) *
           bytes_per_element;
  }
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
  auto nonneg = [](int64_t v) { return static_cast<double>(std::max<int64_t>(v, 0)); };
  const double latent = nonneg(m.q_lora) + nonneg(m.kv_lora) + nonneg(m.rope_dim);
  const double attention =
      2 * d * static_cast<double>(m.heads + m.kv_heads) * m.head_dim +
      (d + latent) * static_cast<double>(m.heads) *
          (static_cast<double>(m.head_dim) + nonneg(m.rope_dim) + nonneg(m.v_head_dim)) +
      d * latent;
  const double mlp = 3 * d * static_cast<double>(m.ffn);
  const double experts =
      3 * d *
      (static_cast<double>(std::max<int64_t>(m.experts, 0)) * static_cast<double>(m.expert_ffn) +
       static_cast<double>(m.shared_ffn));
  const double total = static_cast<double>(m.layers) * (attention + mlp + experts + 4 * d) +
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
  PODSIM_RETURN_IF_ERROR(ValidateLatentAttention(m, where));
  return ValidateExperts(m, where);
}

const std::vector<std::string_view>& ModelPresetNames() {
  static const std::vector<std::string_view> kNames = {
      "llama2-13b",    "llama3-8b",       "llama3-70b",    "llama3-405b",
      "gpt3-175b",     "mixtral-8x7b",    "mixtral-8x22b", "qwen2-57b-a14b",
      "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v2",   "deepseek-v3"};
  return kNames;
}

sim::StatusOr<ModelSpec> ParseModel(std::string_view text) {
  constexpr std::string_view kCustom = "custom:";
  if (text.starts_with(kCustom)) return ParseCustom(text, text.substr(kCustom.size()), nullptr);
  const size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  for (ModelSpec& preset : Presets()) {
    if (preset.name != name) continue;
    if (colon == std::string_view::npos) return std::move(preset);
    return ParseCustom(text, text.substr(colon + 1), &preset);
  }
  text = name;
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
