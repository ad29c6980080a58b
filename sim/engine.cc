#include "sim/engine.h"

#include <utility>

#include "sim/check.h"

namespace podsim::sim {

void Engine::AddObserver(Observer* observer) {
  PODSIM_CHECK(observer != nullptr) << "null observer";
  observers_.push_back(observer);
}

void Engine::Run() { Loop(Time::Max()); }

void Engine::RunUntil(Time limit) {
  PODSIM_CHECK(limit >= now_) << "RunUntil(" << limit << ") is before now " << now_;
  Loop(limit);
  if (!stop_requested_) now_ = limit;
  stop_requested_ = false;
}

void Engine::Loop(Time limit) {
  PODSIM_CHECK(!running_) << "Run() called from inside an event handler";
  running_ = true;
  stop_requested_ = false;
  while (!queue_.empty() && !stop_requested_ && queue_.NextTime() <= limit) {
    EventQueue::Event event = queue_.PopNext();
    PODSIM_CHECK(event.time >= now_) << "event at " << event.time << " is before now " << now_;
    now_ = event.time;
    ++executed_;
    for (Observer* observer : observers_) observer->OnEvent(now_, event.sequence);
    queue_.Run(event);
  }
  running_ = false;
  for (Observer* observer : observers_) observer->OnRunEnd(now_);
  if (limit == Time::Max()) stop_requested_ = false;
}

}  // namespace podsim::sim
