// A stand-in for NCCL for the loader's tests (test_library.cpp): every entry point nccl/api.hpp's
// table binds, under NCCL's names, with NCCL's C types spelled out here. Built twice: complete,
// and without ncclCommAbort (RELAY_STUB_WITHOUT_ABORT). The values it returns are its own
// (version 2.99.7, error strings that say "stub"), so a test sees which library answered.
#include <cstddef>

extern "C" {

struct ncclComm;
using ncclComm_t = ncclComm*;
struct ncclUniqueId {
  char internal[128];
};

const char* ncclGetErrorString(int result) {
  return result == 0 ? "stub: no error" : "stub: an error";
}
int ncclGetVersion(int* version) {
  *version = 29907;
  return 0;
}
int ncclGetUniqueId(ncclUniqueId* id) {
  for (char& c : id->internal)
    c = 's';
  return 0;
}
int ncclCommInitRank(ncclComm_t*, int, ncclUniqueId, int) {
  return 5;  // ncclInvalidUsage: the stub makes no communicators
}
int ncclCommInitAll(ncclComm_t*, int, const int*) {
  return 5;
}
int ncclCommDestroy(ncclComm_t) {
  return 0;
}
#if !defined(RELAY_STUB_WITHOUT_ABORT)
int ncclCommAbort(ncclComm_t) {
  return 0;
}
#endif
int ncclCommGetAsyncError(ncclComm_t, int* async) {
  *async = 0;
  return 0;
}
int ncclCommCount(ncclComm_t, int* count) {
  *count = 0;
  return 0;
}
int ncclCommUserRank(ncclComm_t, int* rank) {
  *rank = 0;
  return 0;
}
int ncclGroupStart() {
  return 0;
}
int ncclGroupEnd() {
  return 0;
}
int ncclSend(const void*, std::size_t, int, int, ncclComm_t, void*) {
  return 5;
}
int ncclRecv(void*, std::size_t, int, int, ncclComm_t, void*) {
  return 5;
}
int ncclAllGather(const void*, void*, std::size_t, int, ncclComm_t, void*) {
  return 5;
}
int ncclAllReduce(const void*, void*, std::size_t, int, int, ncclComm_t, void*) {
  return 5;
}
int ncclReduceScatter(const void*, void*, std::size_t, int, int, ncclComm_t, void*) {
  return 5;
}

}  // extern "C"
