#include "sim/engine.h"

#include "sim/check.h"

namespace podsim::sim {

void Engine::AddObserver(Observer* observer) {
  PODSIM_CHECK(observer != nullptr) << "null observer";
  observers_.push_back(observer);
}

void Engine::Run() { Loop(Time::Max()); }

void Engine::RunUntil(Time limit) {
  PODSIM_CHECK(limit >= now_) << "RunUntil(" << limit << ") is before now " << now_;
  if (!Loop(limit)) now_ = limit;
}

bool Engine::Loop(Time limit) {
  PODSIM_CHECK(!running_) << "Run() called from inside an event handler";
  running_ = true;
  stop_requested_ = passed_horizon_;
  while (!queue_.empty() && !stop_requested_ && queue_.NextTime() <= limit) {
    EventQueue::Event event = queue_.PopNext();
    PODSIM_CHECK(event.time >= now_) << "event at " << event.time << " is before now " << now_;
    now_ = event.time;
    ++executed_;
    for (Observer* observer : observers_) observer->OnEvent(now_, queue_.SequenceOf(event));
    queue_.Run(event);
  }
  running_ = false;
  const bool stopped = stop_requested_;
  stop_requested_ = false;
  for (Observer* observer : observers_) observer->OnRunEnd(now_);
  return stopped;
}

Status PassedHorizonError(std::string_view what) {
  return Status::OutOfRange(std::string(what) +
                            " takes longer than podsim can represent (2^63 ps, about 106 days of "
                            "simulated time); check the sizes, rates and durations of the input");
}

}  // namespace podsim::sim
