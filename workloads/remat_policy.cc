#include "workloads/remat_policy.h"

#include <span>

#include "workloads/named_choice.h"

namespace podsim::workloads {

namespace {

enum class MaxTextPolicy {
  kFull,
  kMinimal,
  kSaveDotExceptMlpwi,
  kSaveDotExceptMlp,
  kSaveQkvProj,
  kSaveOutProj,
  kQkvProjOffloaded,
  kMinimalOffloaded,
};

constexpr NamedChoice<MaxTextPolicy> kPolicyChoices[] = {
    {MaxTextPolicy::kFull, "full"},
    {MaxTextPolicy::kMinimal, "minimal"},
    {MaxTextPolicy::kSaveDotExceptMlpwi, "save_dot_except_mlpwi"},
    {MaxTextPolicy::kSaveDotExceptMlp, "save_dot_except_mlp"},
    {MaxTextPolicy::kSaveQkvProj, "save_qkv_proj"},
    {MaxTextPolicy::kSaveOutProj, "save_out_proj"},
    {MaxTextPolicy::kQkvProjOffloaded, "qkv_proj_offloaded"},
    {MaxTextPolicy::kMinimalOffloaded, "minimal_offloaded"}};
constexpr std::span<const NamedChoice<MaxTextPolicy>> kPolicies = kPolicyChoices;

}  // namespace

std::vector<std::string> MaxTextRematPolicyNames() { return ChoiceNames(kPolicies); }

sim::StatusOr<RematPolicy> MaxTextRematPolicy(std::string_view name) {
  PODSIM_ASSIGN_OR_RETURN(MaxTextPolicy policy,
                          ChoiceNamed(kPolicies, name, "MaxText remat policy"));
  const std::vector<std::string> projections = {"attn.qkv", "attn.out", "mlp.gate", "mlp.up",
                                                "mlp.down"};
  RematPolicy r;
  r.saved = {"input"};
  switch (policy) {
    case MaxTextPolicy::kFull:
      break;
    case MaxTextPolicy::kMinimal:
      r.saved.insert(r.saved.end(), projections.begin(), projections.end());
      break;
    case MaxTextPolicy::kSaveDotExceptMlpwi:
      r.saved.insert(r.saved.end(), {"attn.qkv", "attn.out", "mlp.down"});
      break;
    case MaxTextPolicy::kSaveDotExceptMlp:
      r.saved.insert(r.saved.end(), {"attn.qkv", "attn.out"});
      break;
    case MaxTextPolicy::kSaveQkvProj:
      r.saved.push_back("attn.qkv");
      break;
    case MaxTextPolicy::kSaveOutProj:
      r.saved.push_back("attn.out");
      break;
    case MaxTextPolicy::kQkvProjOffloaded:
      r.offloaded = {"attn.qkv"};
      break;
    case MaxTextPolicy::kMinimalOffloaded:
      r.offloaded = projections;
      break;
  }
  return r;
}

}  // namespace podsim::workloads
