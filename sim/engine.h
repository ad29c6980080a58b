// The discrete-event engine: a clock, the future event set and the run loop.
//
// Determinism: the engine is single-threaded; events run in (time, scheduling order) order
// (event_queue.h), and nothing in the loop reads the wall clock or depends on addresses. The same
// sequence of Schedule calls yields the same sequence of executed events, byte for byte.
//
// Time never goes backwards: scheduling in the past is a programmer error and aborts.
//
// The horizon (time.h): an event due at Time::Max() -- a time too far to represent -- is not
// scheduled. The engine records it (passed_horizon()) and every Run/RunUntil returns at once from
// then on, so the simulation that asked for it can report an OutOfRange error instead of a time.
// Parallelism in podsim comes from running independent Engines side by side (sweeps), never from
// threads inside one.

#ifndef PODSIM_SIM_ENGINE_H_
#define PODSIM_SIM_ENGINE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/check.h"
#include "sim/event_queue.h"
#include "sim/observer.h"
#include "sim/status.h"
#include "sim/time.h"

namespace podsim::sim {

class Engine {
 public:
  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Time now() const { return now_; }

  // Runs `handler` after `delay`. REQUIRES: delay >= 0. Past the horizon: returns an id that
  // names no event and sets passed_horizon().
  template <typename F>
  EventId Schedule(Time delay, F&& handler) {
    PODSIM_CHECK(delay >= Time::Zero()) << "negative delay " << delay;
    return ScheduleAt(now_ + delay, std::forward<F>(handler));
  }
  // Runs `handler` at absolute time `time`. REQUIRES: time >= now(). Past the horizon, as Schedule.
  template <typename F>
  EventId ScheduleAt(Time time, F&& handler) {
    PODSIM_CHECK(time >= now_) << "event scheduled in the past: at " << time << ", now " << now_;
    if (time == Time::Max()) {
      passed_horizon_ = true;
      stop_requested_ = true;
      return EventId{};
    }
    return queue_.Insert(time, std::forward<F>(handler));
  }
  // Whether an event was ever asked for at Time::Max() (see the horizon above).
  bool passed_horizon() const { return passed_horizon_; }
  // Moves pending event `id` to `delay` from now with its handler: the same as cancelling it and
  // scheduling the handler again (a new id and sequence number), cheaper. REQUIRES:
  // IsPending(id), delay >= 0. Past the horizon: cancels it, returns an id that names no event
  // and sets passed_horizon().
  EventId Reschedule(EventId id, Time delay) {
    PODSIM_CHECK(queue_.IsPending(id)) << "rescheduling an event that is not pending";
    PODSIM_CHECK(delay >= Time::Zero()) << "negative delay " << delay;
    const Time time = now_ + delay;
    if (time == Time::Max()) {
      queue_.Cancel(id);
      passed_horizon_ = true;
      stop_requested_ = true;
      return EventId{};
    }
    return queue_.Reschedule(id, time);
  }
  // Cancels a pending event; returns false if it ran already or was cancelled.
  bool Cancel(EventId id) { return queue_.Cancel(id); }
  bool IsPending(EventId id) const { return queue_.IsPending(id); }

  // Runs events until none is left or Stop() is called.
  void Run();
  // Runs every event due at or before `limit`, then advances the clock to `limit` (unless Stop()
  // ended the run first). Events after `limit` stay pending. REQUIRES: limit >= now().
  void RunUntil(Time limit);
  // Makes the current Run/RunUntil return after the event being executed. Pending events stay.
  void Stop() { stop_requested_ = true; }

  size_t pending_events() const { return queue_.size(); }
  // Events scheduled so far (each Schedule, ScheduleAt or Reschedule that made one): two equal
  // readings mean that nothing was scheduled in between.
  uint64_t scheduled_events() const { return queue_.next_sequence(); }
  uint64_t executed_events() const { return executed_; }

  // Attaches an observer (not owned; it must outlive the engine's runs). Observers are notified in
  // the order they were added.
  void AddObserver(Observer* observer);

 private:
  // Runs events due at or before `limit`; returns whether Stop() ended the run.
  bool Loop(Time limit);

  EventQueue queue_;
  Time now_ = Time::Zero();
  uint64_t executed_ = 0;
  bool stop_requested_ = false;
  bool passed_horizon_ = false;
  bool running_ = false;
  std::vector<Observer*> observers_;
};

// The OutOfRange error of a simulation whose engine passed the horizon: "<what> takes longer
// than podsim can represent (2^63 ps, about 106 days of simulated time); check the sizes, rates
// and durations of the input".
Status PassedHorizonError(std::string_view what);

}  // namespace podsim::sim

#endif  // PODSIM_SIM_ENGINE_H_
