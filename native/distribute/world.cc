#include "native/distribute/world.h"

#include <mutex>

namespace hb {
namespace distribute {

namespace {

struct World {
  std::mutex mutex;
  std::shared_ptr<ProcessGroup> group;
};

World& world() {
  static World* w = new World();  // leaked: queue threads may outlive static destruction
  return *w;
}

}  // namespace

std::shared_ptr<ProcessGroup> worldGroup() {
  World& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  return w.group;
}

void setWorldGroup(std::shared_ptr<ProcessGroup> group) {
  World& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  w.group = std::move(group);
}

std::shared_ptr<ProcessGroup> takeWorldGroup() {
  World& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  std::shared_ptr<ProcessGroup> group;
  group.swap(w.group);
  return group;
}

}  // namespace distribute
}  // namespace hb
