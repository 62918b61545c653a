// Graphs with serving ranks. A captured call runs at every replay of its graph, and a replay
// runs no host code that a communicator sees, so the ranks that serve learn of captures and
// replays from the plane too:
//
//   ranks that call                                  ranks that serve (serve/serve.hpp)
//   serve::begin_capture(comm, id)                   begin capturing on serve_options::stream
//   cudaStreamBeginCapture; calls; EndCapture        serve the same calls into that capture
//   serve::end_capture(comm)                         end it: graph `id`, instantiated and kept
//   serve::announce_replay(comm, id); launch         launch graph `id`, in the same place among
//                                                    the eager calls as the callers launch theirs
//
// The callers capture as they do without serving ranks (a shape's first call made eagerly before
// it is captured: the ipc transport prepares a shape on its first call). A serving rank follows
// with a graph_runtime (serve/device_graphs.hpp for CUDA and HIP). One that cannot (none given, a
// capture that failed on it, a replay of a graph it never captured) gives up on the job, so every
// rank's call fails at once instead of waiting for its part.
#pragma once

#include <cstdint>

#include "relay/serve/plane.hpp"

namespace relay::serve {

// What a serving rank needs to follow the callers' graphs.
class graph_runtime {
 public:
  virtual ~graph_runtime() = default;
  // Work issued on `stream` from here on is captured ...
  virtual status begin_capture(void* stream) = 0;
  // ... up to here: graph `id`, kept for launch.
  virtual status end_capture(void* stream, std::uint64_t id) = 0;
  // Launches graph `id` on `stream`; an id never captured is an error.
  virtual status launch(std::uint64_t id, void* stream) = 0;
};

namespace detail {

inline status no_plane_for_graphs() {
  return {errc::invalid_argument,
          "the communicator has no control plane (serve::attach_plane): nobody to tell of "
          "captures and replays"};
}

}  // namespace detail

// Every rank that calls, before capturing calls into a graph: `id` names the graph.
inline status begin_capture(communicator& comm, std::uint64_t& id) {
  control_plane* p = plane_of(comm);
  if (p == nullptr) return detail::no_plane_for_graphs();
  return p->begin_capture(id);
}

// Every rank that calls, after its last call into the graph (before or after ending its own
// stream's capture).
inline status end_capture(communicator& comm) {
  control_plane* p = plane_of(comm);
  if (p == nullptr) return detail::no_plane_for_graphs();
  return p->end_capture();
}

// Every rank that calls, before each launch of graph `id`.
inline status announce_replay(communicator& comm, std::uint64_t id) {
  control_plane* p = plane_of(comm);
  if (p == nullptr) return detail::no_plane_for_graphs();
  return p->replay(id);
}

}  // namespace relay::serve
