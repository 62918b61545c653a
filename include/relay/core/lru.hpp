// The eviction every cache of prepared work shares (the GPU executor's programs, the ipc
// transport's descriptor lists, the nccl transport's reduction lists): entries carry `last_use`,
// a count of their owner's uses, and the least recently used one goes when the cache is full.
#pragma once

#include <algorithm>
#include <vector>

namespace relay {

// Calls release(e) on the entry with the smallest last_use, then erases it; `entries` is not
// empty.
template <class Entry, class Release>
void evict_least_recent(std::vector<Entry>& entries, Release release) {
  const auto oldest =
      std::min_element(entries.begin(), entries.end(),
                       [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
  release(*oldest);
  entries.erase(oldest);
}

}  // namespace relay
