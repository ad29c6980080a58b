// EventHandler: a move-only `void()` callable with inline storage, the payload of every event.
//
// Why not std::function: libstdc++ keeps only 16 bytes inline, so a handler capturing `this`
// and two ids already costs a heap allocation per event, which dominated the engine's profile
// (std::function ran the engine at ~8M events/s, this at the rate in README "Performance").
// Callables up to kInlineBytes that are nothrow-movable live inside the handler; larger ones go
// to the heap. Calling an empty handler is a programmer error and aborts.

#ifndef PODSIM_SIM_EVENT_HANDLER_H_
#define PODSIM_SIM_EVENT_HANDLER_H_

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "sim/check.h"

namespace podsim::sim {

class EventHandler {
 public:
  static constexpr size_t kInlineBytes = 48;

  EventHandler() = default;
  EventHandler(std::nullptr_t) {}  // NOLINT: mirrors std::function.

  template <typename F, typename D = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<D, EventHandler> &&
                                        std::is_invocable_r_v<void, D&>>>
  EventHandler(F&& callable) {  // NOLINT: implicit like std::function.
    Construct(std::forward<F>(callable));
  }

  EventHandler(EventHandler&& other) noexcept { MoveFrom(other); }
  EventHandler& operator=(EventHandler&& other) noexcept {
    if (this != &other) {
      Reset();
      MoveFrom(other);
    }
    return *this;
  }
  EventHandler& operator=(std::nullptr_t) {
    Reset();
    return *this;
  }
  EventHandler(const EventHandler&) = delete;
  EventHandler& operator=(const EventHandler&) = delete;
  ~EventHandler() { Reset(); }

  // Replaces the callable with `callable`, constructed in place (no temporary to relocate).
  template <typename F>
  void Emplace(F&& callable) {
    using D = std::decay_t<F>;
    if constexpr (std::is_same_v<D, EventHandler>) {
      *this = std::forward<F>(callable);
    } else {
      Reset();
      Construct(std::forward<F>(callable));
    }
  }

  explicit operator bool() const { return ops_ != nullptr; }

  void operator()() {
    PODSIM_CHECK(ops_ != nullptr) << "called an empty EventHandler";
    ops_->invoke(storage_);
  }

 private:
  // REQUIRES: empty.
  template <typename F>
  void Construct(F&& callable) {
    using D = std::decay_t<F>;
    if constexpr (std::is_same_v<D, std::nullptr_t>) {
      return;
    } else if constexpr (kStoredInline<D>) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(callable));
      ops_ = &kInlineOps<D>;
    } else {
      ::new (static_cast<void*>(storage_)) D*(new D(std::forward<F>(callable)));
      ops_ = &kHeapOps<D>;
    }
  }

  struct Ops {
    void (*invoke)(void* storage);
    // Move-constructs into `to` and destroys the source.
    void (*relocate)(void* from, void* to) noexcept;
    void (*destroy)(void* storage) noexcept;
  };

  template <typename D>
  static constexpr bool kStoredInline =
      sizeof(D) <= kInlineBytes &&
      alignof(D) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<D>;

  template <typename D>
  static constexpr Ops kInlineOps = {
      [](void* s) { (*std::launder(static_cast<D*>(s)))(); },
      [](void* from, void* to) noexcept {
        D* source = std::launder(static_cast<D*>(from));
        ::new (to) D(std::move(*source));
        source->~D();
      },
      [](void* s) noexcept { std::launder(static_cast<D*>(s))->~D(); },
  };

  template <typename D>
  static constexpr Ops kHeapOps = {
      [](void* s) { (**std::launder(static_cast<D**>(s)))(); },
      [](void* from, void* to) noexcept { ::new (to) D*(*std::launder(static_cast<D**>(from))); },
      [](void* s) noexcept { delete *std::launder(static_cast<D**>(s)); },
  };

  void MoveFrom(EventHandler& other) noexcept {
    if (other.ops_ == nullptr) return;
    other.ops_->relocate(other.storage_, storage_);
    ops_ = other.ops_;
    other.ops_ = nullptr;
  }
  void Reset() noexcept {
    if (ops_ == nullptr) return;
    ops_->destroy(storage_);
    ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char storage_[kInlineBytes];
  const Ops* ops_ = nullptr;
};

}  // namespace podsim::sim

#endif  // PODSIM_SIM_EVENT_HANDLER_H_
