/* A stand-in for the C ABI entries a repeated relay.torch call makes, as a stream transport
 * (ipc, nccl) answers them, doing nothing else: python_pieces.py puts them in place of the
 * library's own, so that the Python layer's time per call is measured without a peer or a
 * device, through ctypes as the real entries are called. relay_run_call_async and relay_comm_mark
 * number calls from 1 and report every call older than the last RELAY_ASYNC_DEPTH retired, as
 * the library does on a stream transport; the waits return RELAY_OK. Each entry keeps the
 * communicator and stream pointers it was last given (relay_standin_seen), so that the bench
 * shows they arrived whole (64-bit values above 2^32).
 *
 *   cc -O2 -shared -fPIC -std=c99 -Iinclude bench/tools/call-cost/standin.c -o standin.so */
#include <stdint.h>

#include "relay/c/relay.h"

static uint64_t made;
static const void* seen[3];  // the last communicator, stream and operation stream passed

static relay_status numbered(relay_comm* comm, void* stream, void* op_stream,
                             relay_async_call* out) {
  seen[0] = comm, seen[1] = stream, seen[2] = op_stream;
  out->call = ++made;
  out->retired = made > RELAY_ASYNC_DEPTH ? made - RELAY_ASYNC_DEPTH : 0;
  return RELAY_OK;
}

relay_status relay_run_call(relay_comm* comm, const relay_call* call, void* stream) {
  (void)call;
  seen[0] = comm, seen[1] = stream;
  return RELAY_OK;
}

relay_status relay_run_call_async(relay_comm* comm, const relay_call* call, void* stream,
                                  void* op_stream, relay_async_call* out) {
  (void)call;
  return numbered(comm, stream, op_stream, out);
}

relay_status relay_comm_mark(relay_comm* comm, void* stream, void* op_stream,
                             relay_async_call* out) {
  return numbered(comm, stream, op_stream, out);
}

relay_status relay_comm_order_after(relay_comm* comm, uint64_t call, void* stream) {
  (void)call;
  seen[0] = comm, seen[1] = stream;
  return RELAY_OK;
}

relay_status relay_comm_join_call(relay_comm* comm, uint64_t call, void* stream) {
  (void)call;
  seen[0] = comm, seen[1] = stream;
  return RELAY_OK;
}

relay_status relay_comm_async_status(relay_comm* comm) {
  seen[0] = comm;
  return RELAY_OK;
}

relay_status relay_comm_call_finished(relay_comm* comm, uint64_t call, int32_t* finished) {
  seen[0] = comm;
  *finished = call + RELAY_ASYNC_DEPTH <= made;
  return RELAY_OK;
}

/* The pointer the last entry got at `which`: 0 the communicator, 1 the stream, 2 the operation
 * stream. */
const void* relay_standin_seen(int which) {
  return which >= 0 && which < 3 ? seen[which] : 0;
}
