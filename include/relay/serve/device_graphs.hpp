// A serving rank's graphs on the GPU runtime (CUDA or HIP): serve/graphs.hpp's graph_runtime.
// It captures the served calls on the serving stream (this thread's capture, as the ipc
// transport's own tests do), keeps each graph instantiated under the callers' id, and launches
// it when the plane says the callers launch theirs. Every runtime call is checked.
//
//   relay::serve::device_graphs graphs(comm->device());
//   relay::serve::serve(*comm, {.stream = stream, .graphs = &graphs});
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "relay/core/no_copy.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/serve/graphs.hpp"

namespace relay::serve {

class device_graphs final : public graph_runtime, no_copy {
 public:
  explicit device_graphs(int device) : device_(device) {}
  ~device_graphs() override {
    for (auto& kept : graphs_)
      (void)gpu::rt::graph_exec_destroy(kept.second);
  }

  status begin_capture(void* stream) override {
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return gpu::failure("selecting the device", device_, e);
    if (gpu::rt::error_t e = gpu::rt::begin_capture(as_stream(stream)); e != gpu::rt::success)
      return gpu::failure("beginning the serving stream's capture", device_, e);
    return {};
  }

  status end_capture(void* stream, std::uint64_t id) override {
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return gpu::failure("selecting the device", device_, e);
    gpu::rt::graph_t graph = nullptr;
    if (gpu::rt::error_t e = gpu::rt::end_capture(as_stream(stream), &graph); e != gpu::rt::success)
      return gpu::failure(("ending the capture of graph " + std::to_string(id)).c_str(), device_,
                          e);
    gpu::rt::graph_exec_t exec = nullptr;
    const gpu::rt::error_t made = gpu::rt::graph_instantiate(&exec, graph);
    (void)gpu::rt::graph_destroy(graph);
    if (made != gpu::rt::success)
      return gpu::failure(("instantiating graph " + std::to_string(id)).c_str(), device_, made);
    if (auto old = graphs_.find(id); old != graphs_.end())
      (void)gpu::rt::graph_exec_destroy(old->second);
    graphs_[id] = exec;
    return {};
  }

  status launch(std::uint64_t id, void* stream) override {
    const auto kept = graphs_.find(id);
    if (kept == graphs_.end())
      return {errc::invalid_argument, "graph " + std::to_string(id) +
                                          " was never captured on this serving rank: it cannot "
                                          "take part in its replay"};
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return gpu::failure("selecting the device", device_, e);
    if (gpu::rt::error_t e = gpu::rt::graph_launch(kept->second, as_stream(stream));
        e != gpu::rt::success)
      return gpu::failure(("launching graph " + std::to_string(id)).c_str(), device_, e);
    return {};
  }

  // Forgets graph `id` (tests: a serving rank that lost a graph must not hang its peers).
  void forget(std::uint64_t id) {
    if (auto kept = graphs_.find(id); kept != graphs_.end()) {
      (void)gpu::rt::graph_exec_destroy(kept->second);
      graphs_.erase(kept);
    }
  }

 private:
  static gpu::rt::stream_t as_stream(void* s) { return static_cast<gpu::rt::stream_t>(s); }

  int device_;
  std::map<std::uint64_t, gpu::rt::graph_exec_t> graphs_;
};

}  // namespace relay::serve
