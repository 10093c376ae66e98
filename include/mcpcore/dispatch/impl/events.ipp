// SPDX-License-Identifier: Apache-2.0
// The server's events (docs/eras.md#subscriptions): the hub subscribers register with, publishing,
// and the run-time visibility of tools and prompts that publishes list changes.
#ifndef MCPCORE_IMPL_EVENTS_IPP
#define MCPCORE_IMPL_EVENTS_IPP

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/dispatch/impl/server_state.ipp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// The subscribers of one server. Publishing copies the list under the lock and calls outside it;
/// `cancel` waits (on `calling`) until no publish is inside the cancelled callback, so a callback
/// never runs after its subscription ended.
struct event_hub {
  struct entry {
    std::uint64_t key = 0;
    std::shared_ptr<const std::function<void(const server_event&)>> fn;
  };
  std::mutex mutex;  // a leaf
  std::vector<entry> entries;        // guarded by mutex
  std::uint64_t next = 0;            // guarded by mutex
  std::recursive_mutex calling;      // held while callbacks run; cancel takes it to wait them out
};

/// Hands `e` to every subscriber of `hub` (`server::publish`; the task engine's status changes,
/// docs/tasks.md#notifications).
inline void publish_event(event_hub& hub, const server_event& e) noexcept {
  const std::lock_guard<std::recursive_mutex> calling(hub.calling);
  std::vector<event_hub::entry> now;
  try {
    const std::lock_guard<std::mutex> lock(hub.mutex);
    now = hub.entries;
  } catch (...) {
    return;  // no memory for the copy: this event is lost (the listeners' lists may be stale)
  }
  for (const auto& entry : now) {
    try {
      (*entry.fn)(e);
    } catch (...) {  // NOLINT(bugprone-empty-catch): one subscriber's failure is not the others'
    }
  }
}

}  // namespace detail

MCPCORE_DECL event_subscription& event_subscription::operator=(event_subscription&& other) noexcept {
  if (this != &other) {
    cancel();
    hub_ = std::move(other.hub_);
    key_ = std::exchange(other.key_, 0);
  }
  return *this;
}

MCPCORE_DECL event_subscription::~event_subscription() { cancel(); }

MCPCORE_DECL void event_subscription::cancel() noexcept {
  const std::shared_ptr<detail::event_hub> hub = hub_.lock();
  hub_.reset();
  if (!hub) return;
  {
    const std::lock_guard<std::mutex> lock(hub->mutex);
    std::erase_if(hub->entries, [this](const detail::event_hub::entry& e) { return e.key == key_; });
  }
  // A publish that copied the entry before the erase may still be calling it: wait for it.
  const std::lock_guard<std::recursive_mutex> wait(hub->calling);
}

MCPCORE_DECL event_subscription server::subscribe(std::function<void(const server_event&)> f) {
  auto fn = std::make_shared<const std::function<void(const server_event&)>>(std::move(f));
  detail::event_hub& hub = *impl_->events;
  const std::lock_guard<std::mutex> lock(hub.mutex);
  const std::uint64_t key = ++hub.next;
  hub.entries.push_back({key, std::move(fn)});
  return event_subscription{impl_->events, key};
}

MCPCORE_DECL void server::publish(const server_event& e) noexcept { detail::publish_event(*impl_->events, e); }

MCPCORE_DECL std::string event_notification(const server_event& e) {
  std::string out;
  switch (e.kind) {
    case server_event_kind::tools_list_changed: write_notification(out, "notifications/tools/list_changed"); break;
    case server_event_kind::prompts_list_changed: write_notification(out, "notifications/prompts/list_changed"); break;
    case server_event_kind::resources_list_changed:
      write_notification(out, "notifications/resources/list_changed");
      break;
    case server_event_kind::resource_updated:
      write_notification(out, "notifications/resources/updated",
                         [&](json::writer& w) { w.begin_object().member("uri", e.uri).end_object(); });
      break;
    case server_event_kind::task_status: break;  // a listen's only (docs/tasks.md#notifications)
  }
  return out;
}

MCPCORE_DECL bool server::publishes(server_event_kind k) const noexcept {
  if (k == server_event_kind::task_status) return impl_->tasks != nullptr;
  if (impl_->options.list_changed) return true;  // every family may fill at run time
  const auto t = impl_->tables();
  switch (k) {
    case server_event_kind::tools_list_changed: return !t->tools.empty();
    case server_event_kind::prompts_list_changed: return !t->prompts.empty();
    case server_event_kind::resources_list_changed:
    case server_event_kind::resource_updated: return !t->resources.empty() || !t->templates.empty();
    case server_event_kind::task_status: break;
  }
  return false;
}

MCPCORE_DECL bool server::set_tool_enabled(std::string_view name, bool enabled) noexcept {
  const auto t = impl_->tables();
  const auto it = t->tool_index.find(name);
  if (it == t->tool_index.end()) return false;
  if (t->tools[it->second]->hidden.exchange(!enabled) != !enabled) {
    publish(server_event{server_event_kind::tools_list_changed, {}});
  }
  return true;
}

MCPCORE_DECL bool server::set_prompt_enabled(std::string_view name, bool enabled) noexcept {
  const auto t = impl_->tables();
  const auto it = t->prompt_index.find(name);
  if (it == t->prompt_index.end()) return false;
  if (t->prompts[it->second]->hidden.exchange(!enabled) != !enabled) {
    publish(server_event{server_event_kind::prompts_list_changed, {}});
  }
  return true;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_EVENTS_IPP
