// The NCCL baseline: each group one communicator (ncclCommInitAll over its ranks' devices), every
// group's collective issued in one NCCL group call from this thread, timed by CUDA events on each
// rank's stream (a call lasts as long as its slowest rank). Same data, check and rotation rules
// as relay's rows. No {fmt} here: this file is built against the CUDA and NCCL headers only.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "baseline/nccl_types.hpp"
#include "baseline/vendor.hpp"
#include "sweep/data.hpp"
#include "sweep/measure.hpp"

namespace relay::bench {

namespace {

status cuda_failure(cudaError_t e, const char* what) {
  return {errc::gpu_error, std::string(what) + ": " + cudaGetErrorString(e)};
}
status nccl_failure(ncclResult_t e, const char* what) {
  return {errc::gpu_error, std::string(what) + ": " + ncclGetErrorString(e)};
}
#define RELAY_BENCH_CUDA(call)                                                      \
  do {                                                                              \
    if (cudaError_t e_ = (call); e_ != cudaSuccess) return cuda_failure(e_, #call); \
  } while (0)
#define RELAY_BENCH_NCCL(call)                                                       \
  do {                                                                               \
    if (ncclResult_t e_ = (call); e_ != ncclSuccess) return nccl_failure(e_, #call); \
  } while (0)

// One communicator per group of ranks, kept for the whole run.
struct communicator {
  std::vector<int> devices;  // by comm rank (= active index)
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> starts, stops;
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
  nccl_runner(std::vector<int> device_of, int device_count)
      : device_of_(std::move(device_of)), device_count_(device_count) {}
  ~nccl_runner() override {
    for (auto& [ranks, c] : comms_) {
      for (std::size_t i = 0; i < c.comms.size(); ++i) {
        cudaSetDevice(c.devices[i]);
        ncclCommDestroy(c.comms[i]);
        cudaStreamDestroy(c.streams[i]);
        cudaEventDestroy(c.starts[i]);
        cudaEventDestroy(c.stops[i]);
      }
    }
  }

  std::string description() const override {
    int v = 0;
    ncclGetVersion(&v);
    const int major = v / 10000, minor = (v / 100) % 100, patch = v % 100;
    return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." +
           std::to_string(patch) + " over " + std::to_string(device_count_) + " devices";
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
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, memory.front().device);
    const int sets = rotation_sets(per_device_set, 2 * std::int64_t{l2}, settings.iterations);
    struct release {
      std::vector<rank_memory>& m;
      ~release() {
        for (rank_memory& x : m)
          if (x.base != nullptr) {
            cudaSetDevice(x.device);
            cudaFree(x.base);
          }
      }
    } guard{memory};
    for (rank_memory& m : memory) {
      RELAY_BENCH_CUDA(cudaSetDevice(m.device));
      RELAY_BENCH_CUDA(cudaMalloc(&m.base, std::max<std::size_t>(1, m.at.region * sets)));
    }

    // Inputs everywhere; in the checked run's set, outputs poisoned first.
    std::vector<std::byte> host;
    for (const rank_memory& m : memory) {
      if (settings.check && !(in_place && c != collective::all_gather)) {
        host.assign(m.at.out_bytes, std::byte{poison_byte});
        RELAY_BENCH_CUDA(cudaMemcpy(m.output(0), host.data(), m.at.out_bytes, cudaMemcpyDefault));
      }
      host.resize(m.at.in_bytes);
      fill_input(type, settings.seed, m.at.rank, static_cast<std::int64_t>(m.at.in_bytes) / es,
                 host.data());
      for (int set = 0; set < sets; ++set)
        RELAY_BENCH_CUDA(cudaMemcpy(m.input(set), host.data(), m.at.in_bytes, cudaMemcpyDefault));
    }

    auto call = [&](int set) -> status {
      RELAY_BENCH_NCCL(ncclGroupStart());
      for (const rank_memory& m : memory)
        if (status s = issue(c, type, op, *comms[static_cast<std::size_t>(m.at.group)], m.at.index,
                             A, n, m.input(set), m.output(set));
            !s) {
          ncclGroupEnd();
          return s;
        }
      RELAY_BENCH_NCCL(ncclGroupEnd());
      return {};
    };
    auto synchronize = [&]() -> status {
      for (communicator* comm : comms)
        for (cudaStream_t s : comm->streams)
          RELAY_BENCH_CUDA(cudaStreamSynchronize(s));
      return {};
    };

    out.ran = true;
    if (settings.check) {
      if (status s = call(0); !s) return s;
      if (status s = synchronize(); !s) return s;
      out.wrong = 0;
      for (const rank_memory& m : memory) {
        host.resize(m.at.out_bytes);
        RELAY_BENCH_CUDA(cudaMemcpy(host.data(), m.output(0), m.at.out_bytes, cudaMemcpyDefault));
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
          RELAY_BENCH_CUDA(cudaEventRecord(comm->starts[k], comm->streams[k]));
      if (status s = call(it % sets); !s) return s;
      for (communicator* comm : comms)
        for (std::size_t k = 0; k < comm->streams.size(); ++k)
          RELAY_BENCH_CUDA(cudaEventRecord(comm->stops[k], comm->streams[k]));
      if (status s = synchronize(); !s) return s;
      float slowest = 0;
      for (communicator* comm : comms)
        for (std::size_t k = 0; k < comm->streams.size(); ++k) {
          float ms = 0;
          RELAY_BENCH_CUDA(cudaEventElapsedTime(&ms, comm->starts[k], comm->stops[k]));
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
    RELAY_BENCH_NCCL(
        ncclCommInitAll(c.comms.data(), static_cast<int>(ranks.size()), c.devices.data()));
    for (int d : c.devices) {
      RELAY_BENCH_CUDA(cudaSetDevice(d));
      c.streams.emplace_back();
      RELAY_BENCH_CUDA(cudaStreamCreateWithFlags(&c.streams.back(), cudaStreamNonBlocking));
      c.starts.emplace_back();
      c.stops.emplace_back();
      RELAY_BENCH_CUDA(cudaEventCreate(&c.starts.back()));
      RELAY_BENCH_CUDA(cudaEventCreate(&c.stops.back()));
    }
    out = &comms_.emplace(ranks, std::move(c)).first->second;
    return {};
  }

  // Comm rank k's part of the collective, inside the caller's NCCL group.
  static status issue(collective c, dtype type, reduce_op op, const communicator& comm, int k,
                      int A, std::int64_t n, const std::byte* in, std::byte* out) {
    const ncclDataType_t t = nccl_type(type);
    const ncclRedOp_t o = op == reduce_op::avg ? ncclAvg : ncclSum;
    const auto count = static_cast<std::size_t>(n);
    const auto bytes = count * static_cast<std::size_t>(size_of(type));
    ncclComm_t cm = comm.comms[static_cast<std::size_t>(k)];
    cudaStream_t s = comm.streams[static_cast<std::size_t>(k)];
    switch (c) {
      case collective::allreduce:
        RELAY_BENCH_NCCL(ncclAllReduce(in, out, count, t, o, cm, s));
        break;
      case collective::reduce_scatter:
        RELAY_BENCH_NCCL(ncclReduceScatter(in, out, count, t, o, cm, s));
        break;
      case collective::all_gather: RELAY_BENCH_NCCL(ncclAllGather(in, out, count, t, cm, s)); break;
      case collective::all_to_all:  // point-to-point, which RCCL has too
        for (int peer = 0; peer < A; ++peer) {
          const auto at = static_cast<std::size_t>(peer) * bytes;
          RELAY_BENCH_NCCL(ncclSend(in + at, count, t, peer, cm, s));
          RELAY_BENCH_NCCL(ncclRecv(out + at, count, t, peer, cm, s));
        }
        break;
    }
    return {};
  }

  std::vector<int> device_of_;
  int device_count_;
  std::map<std::vector<int>, communicator> comms_;
};

}  // namespace

std::unique_ptr<nccl_baseline> make_nccl_baseline(int ranks, const std::vector<int>& devices,
                                                  std::string& why) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    why = e != cudaSuccess ? std::string("no CUDA device: ") + cudaGetErrorString(e)
                           : std::string("no CUDA device");
    return nullptr;
  }
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
  return std::make_unique<nccl_runner>(std::move(device_of), count);
}

}  // namespace relay::bench
