// The NCCL (RCCL) baseline: each group one communicator (ncclCommInitAll over its ranks'
// devices), every group's collective issued in one NCCL group call from this thread, timed by
// device events on each rank's stream (a call lasts as long as its slowest rank). Same data,
// check and rotation rules as relay's rows. NCCL is the process's, found at run time
// (transport/nccl/library.hpp). GPU code (gpu/runtime.hpp), so no {fmt} here.
#include <algorithm>
#include <cstdlib>
#include <map>

#include "backends/device_timing.hpp"
#include "baseline/nccl_collective.hpp"
#include "baseline/vendor.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/transport/nccl/transport.hpp"
#include "sweep/data.hpp"
#include "sweep/measure.hpp"

namespace relay::bench {

namespace {

#define RELAY_BENCH_GPU(call)                                       \
  do {                                                              \
    if (gpu::rt::error_t e_ = (call); e_ != gpu::rt::success)       \
      return {errc::gpu_error, #call ": " + gpu::rt::describe(e_)}; \
  } while (0)

// One communicator per group of ranks, kept for the whole run.
struct communicator {
  std::vector<int> devices;  // by comm rank (= active index)
  std::vector<nccl_comm> comms;
  std::vector<gpu::rt::stream_t> streams;
  std::vector<gpu::rt::event_t> starts, stops;
};

// One rank's buffers on its device: `sets` copies of its region (measure.hpp's layout).
struct rank_memory {
  rank_layout at;
  int device = 0;
  std::byte* base = nullptr;
  std::byte* input(int set) const {
    return base + at.region * static_cast<unsigned>(set) + at.in_at;
  }
  std::byte* output(int set) const {
    return base + at.region * static_cast<unsigned>(set) + at.out_at;
  }
};

class nccl_runner final : public nccl_baseline {
 public:
  nccl_runner(const nccl_api& nccl, std::vector<int> device_of, int device_count)
      : nccl_(nccl), device_of_(std::move(device_of)), device_count_(device_count) {}
  ~nccl_runner() override {
    for (auto& [ranks, c] : comms_) {
      for (std::size_t i = 0; i < c.comms.size(); ++i) {
        (void)gpu::rt::set_device(c.devices[i]);
        if (c.comms[i] != nullptr) (void)nccl_.comm_destroy(c.comms[i]);
        if (i < c.streams.size()) (void)gpu::rt::stream_destroy(c.streams[i]);
        if (i < c.starts.size()) (void)gpu::rt::event_destroy(c.starts[i]);
        if (i < c.stops.size()) (void)gpu::rt::event_destroy(c.stops[i]);
      }
    }
  }

  std::string description() const override {
    int v = 0;
    (void)nccl_.get_version(&v);
    const int major = v / 10000, minor = (v / 100) % 100, patch = v % 100;
    return std::string(gpu_nccl_search.name) + " " + std::to_string(major) + "." +
           std::to_string(minor) + "." + std::to_string(patch) + " over " +
           std::to_string(device_count_) + " devices";
  }

  bool supports(const std::vector<std::vector<int>>& groups, std::string& why) const override {
    for (const auto& g : groups)
      for (std::size_t a = 0; a < g.size(); ++a)
        for (std::size_t b = a + 1; b < g.size(); ++b) {
          const int d = device_of_[static_cast<std::size_t>(g[a])];
          if (d != device_of_[static_cast<std::size_t>(g[b])]) continue;
          why = "ranks " + std::to_string(g[a]) + " and " + std::to_string(g[b]) +
                " of one group share device " + std::to_string(d) +
                ", and NCCL cannot put two ranks of a communicator on one device";
          return false;
        }
    return true;
  }

  status measure(collective c, dtype type, reduce_op op,
                 const std::vector<std::vector<int>>& groups, std::int64_t n, bool in_place,
                 const measure_settings& settings, form_result& out) override {
    out = form_result{};
    std::vector<communicator*> comms;
    for (const auto& g : groups) {
      communicator* comm = nullptr;
      if (status s = communicator_for(g, comm); !s) return s;
      comms.push_back(comm);
    }
    const int es = size_of(type);
    const int A = static_cast<int>(groups.front().size());
    std::vector<rank_memory> memory;
    std::int64_t per_device_set = 0;
    const call_shape shape{c, A, device_count_, run_mode::fused, 0};
    for (const rank_layout& l : buffer_layout(shape, groups, n, es, in_place)) {
      memory.push_back({l, device_of_[static_cast<std::size_t>(l.rank)], nullptr});
      per_device_set = std::max(per_device_set, static_cast<std::int64_t>(l.region));
    }
    const int l2 = l2_bytes(memory.front().device);
    const int sets = rotation_sets(per_device_set, 2 * std::int64_t{l2}, settings.iterations);
    struct release {
      std::vector<rank_memory>& m;
      ~release() {
        for (rank_memory& x : m)
          if (x.base != nullptr) {
            (void)gpu::rt::set_device(x.device);
            (void)gpu::rt::free(x.base);
          }
      }
    } guard{memory};
    for (rank_memory& m : memory) {
      RELAY_BENCH_GPU(gpu::rt::set_device(m.device));
      void* base = nullptr;
      RELAY_BENCH_GPU(gpu::rt::malloc(&base, std::max<std::size_t>(1, m.at.region * sets)));
      m.base = static_cast<std::byte*>(base);
    }

    // Inputs everywhere; in the checked run's set, outputs poisoned first.
    std::vector<std::byte> host;
    for (const rank_memory& m : memory) {
      if (settings.check && !(in_place && c != collective::all_gather)) {
        host.assign(m.at.out_bytes, std::byte{poison_byte});
        RELAY_BENCH_GPU(gpu::rt::memcpy(m.output(0), host.data(), m.at.out_bytes));
      }
      host.resize(m.at.in_bytes);
      fill_input(type, settings.seed, m.at.rank, static_cast<std::int64_t>(m.at.in_bytes) / es,
                 host.data());
      for (int set = 0; set < sets; ++set)
        RELAY_BENCH_GPU(gpu::rt::memcpy(m.input(set), host.data(), m.at.in_bytes));
    }

    auto call = [&](int set) -> status {
      if (nccl_result e = nccl_.group_start(); e != nccl_success)
        return detail::nccl_failure(nccl_, "ncclGroupStart", e);
      for (const rank_memory& m : memory) {
        const communicator& g = *comms[static_cast<std::size_t>(m.at.group)];
        const auto k = static_cast<std::size_t>(m.at.index);
        if (status s =
                nccl_collective(nccl_, g.comms[k], A, c, type, op, static_cast<std::size_t>(n),
                                m.input(set), m.output(set), g.streams[k]);
            !s) {
          (void)nccl_.group_end();
          return s;
        }
      }
      if (nccl_result e = nccl_.group_end(); e != nccl_success)
        return detail::nccl_failure(nccl_, "ncclGroupEnd", e);
      return {};
    };
    auto synchronize = [&]() -> status {
      for (communicator* comm : comms)
        for (gpu::rt::stream_t s : comm->streams)
          RELAY_BENCH_GPU(gpu::rt::stream_synchronize(s));
      return {};
    };

    out.ran = true;
    if (settings.check) {
      if (status s = call(0); !s) return s;
      if (status s = synchronize(); !s) return s;
      out.wrong = 0;
      for (const rank_memory& m : memory) {
        host.resize(m.at.out_bytes);
        RELAY_BENCH_GPU(gpu::rt::memcpy(host.data(), m.output(0), m.at.out_bytes));
        const check_result r =
            check_output(c, type, op, groups[static_cast<std::size_t>(m.at.group)], m.at.index, n,
                         settings.seed, host.data());
        if (r.wrong > 0 && out.wrong == 0) out.first_wrong = r.first;
        out.wrong += r.wrong;
      }
    }
    for (int w = 0; w < warmup_runs(settings.warmup, sets); ++w)
      if (status s = call(w % sets); !s) return s;
    std::vector<double> times;
    for (int it = 0; it < settings.iterations; ++it) {
      for (communicator* comm : comms)
        for (std::size_t k = 0; k < comm->streams.size(); ++k)
          RELAY_BENCH_GPU(gpu::rt::event_record(comm->starts[k], comm->streams[k]));
      if (status s = call(it % sets); !s) return s;
      for (communicator* comm : comms)
        for (std::size_t k = 0; k < comm->streams.size(); ++k)
          RELAY_BENCH_GPU(gpu::rt::event_record(comm->stops[k], comm->streams[k]));
      if (status s = synchronize(); !s) return s;
      float slowest = 0;
      for (communicator* comm : comms)
        for (std::size_t k = 0; k < comm->streams.size(); ++k) {
          float ms = 0;
          RELAY_BENCH_GPU(gpu::rt::event_elapsed_ms(&ms, comm->starts[k], comm->stops[k]));
          slowest = std::max(slowest, ms);
        }
      times.push_back(slowest * 1e-3);
    }
    out.seconds = median(std::move(times));
    return {};
  }

 private:
  status communicator_for(const std::vector<int>& ranks, communicator*& out) {
    auto found = comms_.find(ranks);
    if (found != comms_.end()) {
      out = &found->second;
      return {};
    }
    communicator c;
    for (int r : ranks)
      c.devices.push_back(device_of_[static_cast<std::size_t>(r)]);
    c.comms.assign(ranks.size(), nullptr);
    if (nccl_result e =
            nccl_.comm_init_all(c.comms.data(), static_cast<int>(ranks.size()), c.devices.data());
        e != nccl_success)
      return detail::nccl_failure(nccl_, "ncclCommInitAll", e);
    // Kept before anything else can fail, so that the destructor frees what was made.
    communicator& kept = comms_.emplace(ranks, std::move(c)).first->second;
    for (int d : kept.devices) {
      RELAY_BENCH_GPU(gpu::rt::set_device(d));
      kept.streams.emplace_back();
      RELAY_BENCH_GPU(gpu::rt::stream_create(&kept.streams.back()));
      kept.starts.emplace_back();
      RELAY_BENCH_GPU(gpu::rt::event_create(&kept.starts.back(), true));
      kept.stops.emplace_back();
      RELAY_BENCH_GPU(gpu::rt::event_create(&kept.stops.back(), true));
    }
    out = &kept;
    return {};
  }

  const nccl_api& nccl_;
  std::vector<int> device_of_;
  int device_count_;
  std::map<std::vector<int>, communicator> comms_;
};

}  // namespace

std::unique_ptr<nccl_baseline> make_nccl_baseline(int ranks, const std::vector<int>& devices,
                                                  std::string& why) {
  const int count = visible_devices(why);
  if (count == 0) return nullptr;
  std::vector<int> device_of = devices;
  if (device_of.empty())
    for (int r = 0; r < ranks; ++r)
      device_of.push_back(r % count);
  for (int d : device_of)
    if (d < 0 || d >= count) {
      why =
          "device " + std::to_string(d) + " does not exist (" + std::to_string(count) + " visible)";
      return nullptr;
    }
  // NVLink multicast (NVLS) stays off unless the caller turned it on: on shared hosts it can
  // take the GPUs out of service.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  const nccl_api* nccl = nullptr;
  if (status s = gpu_nccl(nccl); !s) {
    why = s.message();
    return nullptr;
  }
  return std::make_unique<nccl_runner>(*nccl, std::move(device_of), count);
}

}  // namespace relay::bench
