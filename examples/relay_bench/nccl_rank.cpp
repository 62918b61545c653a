// nccl_rank.hpp over CUDA and NCCL: a communicator from the environment with the nccl transport,
// a stream and timing events of this rank, and NCCL's own collectives on the same communicator.
// GPU code (the transport launches relay's reduce kernel), so no {fmt} here.
#include "nccl_rank.hpp"

#include <cstdlib>
#include <sstream>

#include "nccl_types.hpp"
#include "relay/comm/collectives.hpp"
#include "relay/comm/from_environment.hpp"
#include "relay/transport/nccl.hpp"

namespace relay::bench {

namespace {

class cuda_nccl_rank final : public nccl_rank {
 public:
  cuda_nccl_rank(std::unique_ptr<communicator> comm, int device)
      : comm_(std::move(comm)), device_(device) {}
  ~cuda_nccl_rank() override {
    (void)gpu::rt::set_device(device_);
    if (stream_ != nullptr) (void)gpu::rt::stream_synchronize(stream_);
    for (gpu::rt::event_t e : events_)
      (void)gpu::rt::event_destroy(e);
    if (memory_ != nullptr) (void)gpu::rt::free(memory_);
    comm_.reset();
    if (stream_ != nullptr) (void)gpu::rt::stream_destroy(stream_);
  }

  status start() {
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return gpu::failure("selecting the device", device_, e);
    if (gpu::rt::error_t e = gpu::rt::stream_create(&stream_); e != gpu::rt::success)
      return gpu::failure("creating a stream", device_, e);
    return {};
  }

  int rank() const override { return comm_->rank(); }
  int size() const override { return comm_->size(); }
  std::chrono::milliseconds timeout() const override { return comm_->config().timeout; }
  bootstrap& boot() override { return comm_->boot(); }
  std::string description() const override {
    int version = 0;
    (void)ncclGetVersion(&version);
    std::string name;
    (void)gpu::rt::device_name(name, device_);
    std::ostringstream text;
    text << "NCCL " << version / 10000 << "." << version / 100 % 100 << "." << version % 100
         << ", rank " << rank() << " on device " << device_ << " (" << name << ")";
    return text.str();
  }

  void* device_memory(std::size_t bytes) override {
    if (bytes <= capacity_) return memory_;
    (void)gpu::rt::stream_synchronize(stream_);
    if (memory_ != nullptr) (void)gpu::rt::free(memory_);
    memory_ = nullptr;
    capacity_ = 0;
    if (gpu::rt::malloc(&memory_, bytes) != gpu::rt::success) {
      (void)gpu::rt::get_last_error();
      memory_ = nullptr;
      return nullptr;
    }
    capacity_ = bytes;
    return memory_;
  }
  status upload(void* dst, const void* src, std::size_t bytes) override {
    if (gpu::rt::error_t e = gpu::rt::memcpy(dst, src, bytes); e != gpu::rt::success)
      return gpu::failure("an upload", device_, e);
    return {};
  }
  status download(void* dst, const void* src, std::size_t bytes) override {
    if (gpu::rt::error_t e = gpu::rt::memcpy(dst, src, bytes); e != gpu::rt::success)
      return gpu::failure("a download", device_, e);
    return {};
  }

  bool vendor_supports(const rank_collective& c) const override {
    return c.groups.size() == 1 && static_cast<int>(c.groups[0].size()) == size();
  }

  status run(const rank_collective& c, bool vendor, int iterations,
             std::vector<double>* seconds) override {
    while (events_.size() < 2 * static_cast<std::size_t>(iterations)) {
      gpu::rt::event_t e = nullptr;
      if (gpu::rt::error_t x = gpu::rt::event_create(&e, true); x != gpu::rt::success)
        return gpu::failure("creating a timing event", device_, x);
      events_.push_back(e);
    }
    for (int i = 0; i < iterations; ++i) {
      const auto at = static_cast<std::size_t>(2 * i);
      if (gpu::rt::error_t e = gpu::rt::event_record(events_[at], stream_); e != gpu::rt::success)
        return gpu::failure("recording a timing event", device_, e);
      if (status s = vendor ? vendor_call(c) : relay_call(c); !s) return s;
      if (gpu::rt::error_t e = gpu::rt::event_record(events_[at + 1], stream_);
          e != gpu::rt::success)
        return gpu::failure("recording a timing event", device_, e);
    }
    if (gpu::rt::error_t e = gpu::rt::stream_synchronize(stream_); e != gpu::rt::success)
      return gpu::failure("running the calls", device_, e);
    if (comm_->link().broken())
      return {errc::gpu_error, "the NCCL communicator reported an asynchronous error"};
    if (seconds != nullptr) {
      seconds->assign(static_cast<std::size_t>(iterations), 0);
      for (int i = 0; i < iterations; ++i) {
        float ms = 0;
        const auto at = static_cast<std::size_t>(2 * i);
        if (gpu::rt::error_t e = gpu::rt::event_elapsed_ms(&ms, events_[at], events_[at + 1]);
            e != gpu::rt::success)
          return gpu::failure("reading a timing event", device_, e);
        (*seconds)[static_cast<std::size_t>(i)] = ms * 1e-3;
      }
    }
    return {};
  }

 private:
  status relay_call(const rank_collective& c) {
    return run_collective(*comm_, c.coll, c.groups, c.send, c.recv, c.counts, c.type, c.op, c.opt,
                          stream_);
  }

  status vendor_call(const rank_collective& c) {
    ncclComm_t nc = static_cast<nccl_transport&>(comm_->link()).comm();
    const auto n = static_cast<std::size_t>(c.counts[0]);
    const ncclDataType_t t = nccl_type(c.type);
    const ncclRedOp_t op = c.op == reduce_op::avg ? ncclAvg : ncclSum;
    ncclResult_t r = ncclSuccess;
    switch (c.coll) {
      case collective::allreduce:
        r = ncclAllReduce(c.send.data, c.recv.data, n, t, op, nc, stream_);
        break;
      case collective::reduce_scatter:
        r = ncclReduceScatter(c.send.data, c.recv.data, n, t, op, nc, stream_);
        break;
      case collective::all_gather:
        r = ncclAllGather(c.send.data, c.recv.data, n, t, nc, stream_);
        break;
      case collective::all_to_all: {
        const std::size_t seg = n * static_cast<std::size_t>(size_of(c.type));
        r = ncclGroupStart();
        for (int p = 0; p < size() && r == ncclSuccess; ++p) {
          const auto at = static_cast<std::size_t>(p) * seg;
          r = ncclSend(static_cast<const unsigned char*>(c.send.data) + at, n, t, p, nc, stream_);
          if (r == ncclSuccess)
            r = ncclRecv(static_cast<unsigned char*>(c.recv.data) + at, n, t, p, nc, stream_);
        }
        const ncclResult_t end = ncclGroupEnd();
        if (r == ncclSuccess) r = end;
        break;
      }
    }
    if (r != ncclSuccess) return detail::nccl_failure("NCCL's own collective", r);
    return {};
  }

  std::unique_ptr<communicator> comm_;
  int device_ = 0;
  gpu::rt::stream_t stream_ = nullptr;
  std::vector<gpu::rt::event_t> events_;
  void* memory_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace

bool launched_as_rank() {
  for (const char* v : {"RELAY_RANK", "RANK"})
    if (const char* x = std::getenv(v); x != nullptr && *x != '\0') return true;
  return false;
}

std::unique_ptr<nccl_rank> make_nccl_rank(std::string& why) {
  environment env;
  if (status s = environment_from_process(env); !s) {
    why = s.to_string();
    return nullptr;
  }
  std::unique_ptr<communicator> comm;
  if (status s = communicator_from_environment(nccl_factory(), comm); !s) {
    why = s.to_string();
    return nullptr;
  }
  auto r = std::make_unique<cuda_nccl_rank>(std::move(comm), env.device);
  if (status s = r->start(); !s) {
    why = s.to_string();
    return nullptr;
  }
  return r;
}

}  // namespace relay::bench
