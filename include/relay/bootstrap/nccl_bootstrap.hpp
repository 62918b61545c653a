// A bootstrap over an existing NCCL/RCCL communicator: how a communication library that already
// has one embeds relay without a second rendezvous. all_gather is two ncclAllGathers on a stream
// of its own (the sizes, then the bytes padded to the largest), each waited for on the host;
// barrier is an all-gather of nothing. Rank and size are the communicator's.
//
// A wait that passes its timeout aborts the communicator (ncclCommAbort: nothing else can undo
// an NCCL collective a peer never joins) and fails with errc::timeout; the communicator is then
// unusable, for relay and for its owner.
//
// NCCL is the process's (transport/nccl/library.hpp): the one that made the communicator. Where
// it cannot be found, every all_gather and barrier returns that error.
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/transport/nccl/transport.hpp"

namespace relay {

class nccl_bootstrap final : public bootstrap {
 public:
  // `comm` stays the caller's (an ncclComm_t of nccl.h or rccl.h); `device` is the device the
  // communicator's rank uses.
  nccl_bootstrap(nccl_comm comm, int device) : comm_(comm), device_(device) {
    (void)(loaded_ = gpu_nccl(nccl_));
    if (!loaded_) return;
    (void)nccl_->comm_user_rank(comm_, &rank_);
    (void)nccl_->comm_count(comm_, &size_);
  }
  nccl_bootstrap(const nccl_bootstrap&) = delete;
  nccl_bootstrap& operator=(const nccl_bootstrap&) = delete;
  ~nccl_bootstrap() override {
    const gpu::device_guard keep;
    (void)gpu::rt::set_device(device_);
    if (stream_ != nullptr) {
      (void)gpu::rt::stream_synchronize(stream_);
      (void)gpu::rt::stream_destroy(stream_);
    }
    if (buffer_ != nullptr) (void)gpu::rt::free(buffer_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  status all_gather(std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                    milliseconds timeout) override {
    if (!loaded_) return loaded_;
    if (aborted_) return {errc::timeout, "the NCCL communicator was aborted after a timeout"};
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return gpu::failure("selecting the device", device_, e);
    if (stream_ == nullptr)
      if (gpu::rt::error_t e = gpu::rt::stream_create(&stream_); e != gpu::rt::success)
        return gpu::failure("creating the bootstrap's stream", device_, e);
    const auto n = static_cast<std::size_t>(size_);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    // 1. Sizes.
    std::vector<std::uint64_t> sizes(n, 0);
    const std::uint64_t my_size = mine.size();
    if (status s = gather(&my_size, sizeof(my_size), sizes.data(), deadline, "sizes"); !s) return s;
    std::uint64_t longest = 0;
    for (std::uint64_t x : sizes)
      longest = std::max(longest, x);
    all.assign(n, {});
    if (longest == 0) return {};
    // 2. The bytes, padded to the longest.
    std::vector<std::byte> padded(longest, std::byte{0});
    if (!mine.empty()) std::memcpy(padded.data(), mine.data(), mine.size());
    std::vector<std::byte> gathered(longest * n);
    if (status s = gather(padded.data(), longest, gathered.data(), deadline, "bytes"); !s) return s;
    for (std::size_t r = 0; r < n; ++r)
      all[r].assign(gathered.begin() + static_cast<std::ptrdiff_t>(r * longest),
                    gathered.begin() + static_cast<std::ptrdiff_t>(r * longest + sizes[r]));
    return {};
  }

  status barrier(milliseconds timeout) override {
    std::vector<std::vector<std::byte>> ignored;
    return all_gather({}, ignored, timeout);
  }

 private:
  // ncclAllGather of `bytes` per rank from host memory into `out` (size * bytes), through device
  // memory; waits until `deadline`.
  status gather(const void* in, std::size_t bytes, void* out,
                std::chrono::steady_clock::time_point deadline, const char* what) {
    const std::size_t need = bytes * static_cast<std::size_t>(size_ + 1);
    if (need > capacity_) {
      if (buffer_ != nullptr) (void)gpu::rt::free(buffer_);
      buffer_ = nullptr;
      capacity_ = 0;
      if (gpu::rt::error_t e = gpu::rt::malloc(&buffer_, need); e != gpu::rt::success) {
        buffer_ = nullptr;
        return gpu::failure("allocating the bootstrap's buffer", device_, e);
      }
      capacity_ = need;
    }
    auto* send = static_cast<unsigned char*>(buffer_);
    unsigned char* recv = send + bytes;
    if (gpu::rt::error_t e = gpu::rt::memcpy_async(send, in, bytes, stream_); e != gpu::rt::success)
      return gpu::failure("staging the bootstrap's bytes", device_, e);
    if (nccl_result r = nccl_->all_gather(send, recv, bytes, nccl_type::uint8, comm_, stream_);
        r != nccl_success)
      return {errc::gpu_error, std::string("ncclAllGather of the bootstrap's ") + what +
                                   " failed: " + nccl_->get_error_string(r)};
    // Poll, so that a peer that never joins ends in a timeout rather than a hang; read the
    // result only then (a copy into pageable memory would block on the stream).
    for (;;) {
      const gpu::rt::error_t e = gpu::rt::stream_query(stream_);
      if (e == gpu::rt::success) break;
      if (e != gpu::rt::not_ready) return gpu::failure("the bootstrap's all-gather", device_, e);
      if (std::chrono::steady_clock::now() > deadline) {
        (void)nccl_->comm_abort(comm_);
        aborted_ = true;
        return {errc::timeout, std::string("rank ") + std::to_string(rank_) +
                                   ": not every rank joined the bootstrap's all-gather of " + what +
                                   " in time; the NCCL communicator is aborted"};
      }
      std::this_thread::yield();
    }
    if (gpu::rt::error_t e = gpu::rt::memcpy(out, recv, bytes * static_cast<std::size_t>(size_));
        e != gpu::rt::success)
      return gpu::failure("reading the bootstrap's bytes", device_, e);
    return {};
  }

  const nccl_api* nccl_ = nullptr;
  status loaded_;
  nccl_comm comm_ = nullptr;
  int device_ = 0, rank_ = 0, size_ = 1;
  gpu::rt::stream_t stream_ = nullptr;
  void* buffer_ = nullptr;
  std::size_t capacity_ = 0;
  bool aborted_ = false;
};

}  // namespace relay
