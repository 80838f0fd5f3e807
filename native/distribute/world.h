// The process's one process group (the world), once hb.distribute.init has made it.
// The binding sets and clears it; the collective kernels of compiled steps read it, so
// a plan's exchanges run on the same group, in the same sequence, as hb.distribute's.
#pragma once

#include <memory>

#include "native/distribute/process_group.h"

namespace hb {
namespace distribute {

// nullptr when no group is up.
std::shared_ptr<ProcessGroup> worldGroup();
void setWorldGroup(std::shared_ptr<ProcessGroup> group);
// Takes the group out of the world (later reads see none) and returns it.
std::shared_ptr<ProcessGroup> takeWorldGroup();

}  // namespace distribute
}  // namespace hb
