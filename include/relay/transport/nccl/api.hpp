// NCCL's C ABI, the part relay calls, declared here so that nothing in relay needs an NCCL or
// RCCL header to build or links either library: the entry points are found at run time
// (nccl/library.hpp) and called through one table, nccl_api. RCCL is NCCL's API under the same
// names and types (rccl.h is nccl.h's), so one table serves both.
//
// The declarations are NCCL's ABI, not new types: ncclComm_t is a pointer to the incomplete
// struct ncclComm, declared here as nccl.h declares it, so a caller's ncclComm_t (from nccl.h or
// rccl.h) is a relay::nccl_comm; ncclResult_t, ncclDataType_t and ncclRedOp_t are C enums, ints
// here with nccl.h's values; ncclUniqueId is 128 bytes passed by value; a stream (cudaStream_t,
// hipStream_t) is a pointer, passed as void*.
//
// Host code: any compiler may include this header.
#pragma once

#include <cstddef>

struct ncclComm;  // nccl.h: typedef struct ncclComm* ncclComm_t;

namespace relay {

using nccl_comm = ::ncclComm*;
using nccl_result = int;  // ncclResult_t
inline constexpr nccl_result nccl_success = 0;

struct nccl_unique_id {  // ncclUniqueId (NCCL_UNIQUE_ID_BYTES = 128)
  char internal[128];
};
static_assert(sizeof(nccl_unique_id) == 128);

// ncclDataType_t (ncclBfloat16 since NCCL 2.10) and ncclRedOp_t.
enum class nccl_type : int {
  int8 = 0,
  uint8 = 1,
  int32 = 2,
  uint32 = 3,
  int64 = 4,
  uint64 = 5,
  float16 = 6,
  float32 = 7,
  float64 = 8,
  bfloat16 = 9
};
enum class nccl_op : int { sum = 0, prod = 1, max = 2, min = 3, avg = 4 };

// The entry points relay calls, each NCCL's function of the name nccl_entry_points gives it.
struct nccl_api {
  const char* (*get_error_string)(nccl_result) = nullptr;
  nccl_result (*get_version)(int*) = nullptr;
  nccl_result (*get_unique_id)(nccl_unique_id*) = nullptr;
  nccl_result (*comm_init_rank)(nccl_comm*, int ranks, nccl_unique_id, int rank) = nullptr;
  nccl_result (*comm_init_all)(nccl_comm*, int ranks, const int* devices) = nullptr;
  nccl_result (*comm_destroy)(nccl_comm) = nullptr;
  nccl_result (*comm_abort)(nccl_comm) = nullptr;
  nccl_result (*comm_get_async_error)(nccl_comm, nccl_result*) = nullptr;
  nccl_result (*comm_count)(nccl_comm, int*) = nullptr;
  nccl_result (*comm_user_rank)(nccl_comm, int*) = nullptr;
  nccl_result (*group_start)() = nullptr;
  nccl_result (*group_end)() = nullptr;
  nccl_result (*send)(const void*, std::size_t, nccl_type, int peer, nccl_comm,
                      void* stream) = nullptr;
  nccl_result (*recv)(void*, std::size_t, nccl_type, int peer, nccl_comm, void* stream) = nullptr;
  nccl_result (*all_gather)(const void*, void*, std::size_t, nccl_type, nccl_comm,
                            void* stream) = nullptr;
  nccl_result (*all_reduce)(const void*, void*, std::size_t, nccl_type, nccl_op, nccl_comm,
                            void* stream) = nullptr;
  nccl_result (*reduce_scatter)(const void*, void*, std::size_t, nccl_type, nccl_op, nccl_comm,
                                void* stream) = nullptr;
};

// Calls visit(name, entry) for every entry of `api`, with NCCL's name of its function: how the
// loader fills the table, the one list of what relay needs of the library.
template <class Api, class Visit>
void nccl_entry_points(Api& api, Visit&& visit) {
  visit("ncclGetErrorString", api.get_error_string);
  visit("ncclGetVersion", api.get_version);
  visit("ncclGetUniqueId", api.get_unique_id);
  visit("ncclCommInitRank", api.comm_init_rank);
  visit("ncclCommInitAll", api.comm_init_all);
  visit("ncclCommDestroy", api.comm_destroy);
  visit("ncclCommAbort", api.comm_abort);
  visit("ncclCommGetAsyncError", api.comm_get_async_error);
  visit("ncclCommCount", api.comm_count);
  visit("ncclCommUserRank", api.comm_user_rank);
  visit("ncclGroupStart", api.group_start);
  visit("ncclGroupEnd", api.group_end);
  visit("ncclSend", api.send);
  visit("ncclRecv", api.recv);
  visit("ncclAllGather", api.all_gather);
  visit("ncclAllReduce", api.all_reduce);
  visit("ncclReduceScatter", api.reduce_scatter);
}

}  // namespace relay
