#include "workloads/precision.h"

namespace podsim::workloads {

namespace {

constexpr PrecisionRecipe kRecipes[] = {PrecisionRecipe::Mixed(), PrecisionRecipe::Zero(),
                                        PrecisionRecipe::Megatron(), PrecisionRecipe::Book(),
                                        PrecisionRecipe::Amp()};

}  // namespace

std::string PrecisionLabel(const PrecisionRecipe& recipe) {
  std::string label(recipe.name);
  if (recipe.bf16_gradients) label += ", gradients in bf16";
  return label;
}

std::vector<std::string> PrecisionRecipeNames() {
  std::vector<std::string> names;
  for (const PrecisionRecipe& recipe : kRecipes) names.emplace_back(recipe.name);
  return names;
}

sim::StatusOr<PrecisionRecipe> PrecisionRecipeNamed(std::string_view name) {
  std::string names;
  for (const PrecisionRecipe& recipe : kRecipes) {
    if (recipe.name == name) return recipe;
    names += names.empty() ? "" : ", ";
    names += recipe.name;
  }
  std::string message = "precision '";
  message += name;
  message += "' is not a recipe; use one of ";
  message += names;
  return sim::Status::InvalidArgument(message);
}

}  // namespace podsim::workloads
