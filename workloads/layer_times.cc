#include "workloads/layer_times.h"

#include <algorithm>

namespace podsim::workloads {

void LayerTimer::OnOpStart(sim::Time now, uint32_t chip, int program, int op) {
  Extend(now, chip, program, op);
  if (next_ != nullptr) next_->OnOpStart(now, chip, program, op);
}

void LayerTimer::OnOpEnd(sim::Time now, uint32_t chip, int program, int op) {
  Extend(now, chip, program, op);
  if (next_ != nullptr) next_->OnOpEnd(now, chip, program, op);
}

void LayerTimer::OnCollectiveAlgorithm(uint32_t chip, int program, int op,
                                       std::string_view algorithm) {
  if (next_ != nullptr) next_->OnCollectiveAlgorithm(chip, program, op, algorithm);
}

void LayerTimer::Extend(sim::Time now, uint32_t chip, int program, int index) {
  if (program != 0) return;
  const schedule::Op& op = schedule_->programs(0).ops(index);
  if (op.layer() < 0 || op.microbatch() != 0 || (op.stream() != "compute" && op.stream() != "tp")) {
    return;
  }
  if (chip > chip_) return;
  if (chip < chip_) {
    chip_ = chip;
    spans_.clear();
  }
  const Span empty{sim::Time::Max(), sim::Time::Zero()};
  auto [it, added] = spans_.try_emplace(op.layer(), empty, empty);
  Span& span = op.phase() == "forward" ? it->second.first : it->second.second;
  span.first = std::min(span.first, now);
  span.second = std::max(span.second, now);
}

std::vector<LayerTime> LayerTimer::Times() const {
  std::vector<LayerTime> times;
  auto seconds = [](const Span& span) {
    return span.first <= span.second ? (span.second - span.first).ToSeconds() : 0.0;
  };
  for (const auto& [layer, spans] : spans_) {
    times.push_back({layer, seconds(spans.first), seconds(spans.second)});
  }
  return times;
}

}  // namespace podsim::workloads
