// The GPU executor (relay::gpu_executor): ranks mapped to devices, several ranks may share one.
// Compiled as GPU code (the executor's header holds its kernels), so no {fmt} here.
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <sstream>

#include "backends/device_timing.hpp"
#include "backends/executor_backend.hpp"
#include "relay/exec/gpu/executor.hpp"
#include "sweep/measure.hpp"

namespace relay::bench {

namespace {

class gpu_backend : public device_backend<gpu_executor> {
 public:
  gpu_backend(const std::vector<int>& device_of, std::uint64_t emulate_mesh)
      : device_backend(
            [device_of, emulate_mesh] {
              // Every rotated buffer set stays prepared (see measure.hpp), the baseline's too.
              gpu_options o;
              o.cached_plans = 2 * max_rotation_sets + 2;
              o.time_runs = true;
              o.emulate_mesh = emulate_mesh;
              return std::make_unique<gpu_executor>(device_of, o);
            },
            device_of),
        emulate_mesh_(emulate_mesh) {}

  std::string description() const override {
    std::map<int, std::vector<int>> ranks_on;
    for (std::size_t r = 0; r < device_of().size(); ++r)
      ranks_on[device_of()[r]].push_back(static_cast<int>(r));
    // A stream, not string concatenation: GCC 12 under nvcc sees a -Wrestrict ghost in that.
    std::ostringstream text;
    text << "gpu: relay gpu_executor (kernel copies, a stream per device), " << device_of().size()
         << " ranks on " << ranks_on.size() << " device(s):";
    for (const auto& [device, ranks] : ranks_on) {
      std::string name;
      (void)gpu::rt::device_name(name, device);
      text << " " << device << " " << name << " (ranks";
      for (int r : ranks)
        text << " " << r;
      text << ")";
    }
    if (emulate_mesh_ != 0)
      text << "; emulating a mesh: every copy between two ranks paced so that each ordered pair "
              "moves at most "
           << static_cast<double>(emulate_mesh_) / 1e9 << " GB/s";
    text << "; timed by device events around each run";
    return text.str();
  }

 private:
  std::uint64_t emulate_mesh_ = 0;
};

}  // namespace

std::unique_ptr<backend> make_gpu_backend(int ranks, const std::vector<int>& devices,
                                          std::uint64_t emulate_mesh, std::string& why) {
  std::vector<int> device_of = devices;
  if (device_of.empty()) {
    const int count = visible_devices(why);
    if (count == 0) return nullptr;
    for (int r = 0; r < ranks; ++r)
      device_of.push_back(r % count);
  }
  {
    gpu_options o;
    o.emulate_mesh = emulate_mesh;
    const gpu_executor probe(device_of, o);
    if (!probe.init_status()) {
      why = probe.init_status().to_string();
      return nullptr;
    }
  }
  return std::make_unique<gpu_backend>(device_of, emulate_mesh);
}

}  // namespace relay::bench
