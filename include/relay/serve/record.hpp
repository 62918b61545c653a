// The control plane's records: what a publisher writes into the plane (serve/plane.hpp) and a
// consumer reads back, as bytes. Two streams carry them:
//   - the call stream, one record per step of the communicator that its serving helpers must
//     take part in: a call (its shape as the caller passed it and the choice the caller's cost
//     model made for it), a refusal made before the call had a shape (communicator::refuse), a
//     collective registration, the start and end of a graph capture, a graph's replay, and stop;
//   - the plan stream, one record per forward a program publishes up front: a list of call
//     shapes (relay's terms), or torchcomms' five fields (op code, dtype, reduce op, flags, one
//     count per call).
// A record says which it is and carries the communicator's call sequence it belongs to, so a
// consumer that is not where the publisher was finds out at once instead of serving a call it
// was not meant to.
//
// Both ends run on one host (the plane is a memfd shared by the processes of one node), so the
// bytes are the host's own; every read is bounds-checked, and a record that does not parse is an
// error naming what was short, never a partly read shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "relay/core/status.hpp"
#include "relay/plan/call_shape.hpp"

namespace relay::serve {

enum class record_kind : std::uint32_t {
  call = 1,         // a collective call: shape and choice
  refusal,          // a call its publisher refused before it had a shape
  register_buffer,  // communicator::register_buffer (helpers register nothing)
  deregister_buffer,
  register_graph_inputs,
  deregister_graph_inputs,
  capture_begin,  // the publisher's calls from here on are captured into graph `capture`
  capture_end,    // ... up to here
  replay,         // graph `capture` is launched once
  stop,           // the helpers return from serve() (with the callers' failure, if one is told)
  unservable,     // a call whose shape does not fit a record: every rank refuses it
  forward,        // plan stream: a forward's calls in relay's terms
  control,        // plan stream: torchcomms' five fields
};

constexpr const char* name(record_kind k) {
  switch (k) {
    case record_kind::call: return "a call";
    case record_kind::refusal: return "a refusal";
    case record_kind::register_buffer: return "a buffer registration";
    case record_kind::deregister_buffer: return "a buffer deregistration";
    case record_kind::register_graph_inputs: return "a registration of graph inputs";
    case record_kind::deregister_graph_inputs: return "a deregistration of graph inputs";
    case record_kind::capture_begin: return "the start of a capture";
    case record_kind::capture_end: return "the end of a capture";
    case record_kind::replay: return "a replay";
    case record_kind::stop: return "stop";
    case record_kind::unservable: return "an unservable call";
    case record_kind::forward: return "a forward's plan";
    case record_kind::control: return "a torchcomms-shaped plan";
  }
  return "an unknown record";
}

// Every record starts so.
struct record_head {
  record_kind kind = record_kind::stop;
  std::uint32_t publisher = 0;  // the rank that wrote it
  std::uint64_t sequence = 0;   // the call it is (call, refusal), or the calls made before it
  std::uint64_t capture = 0;    // the capture its call is part of (0: none), or the one it names
};

// The bytes of a record that is its head alone.
inline constexpr std::size_t record_head_bytes =
    2 * sizeof(std::uint32_t) + 2 * sizeof(std::uint64_t);

// A call as the helpers serve it: the shape as passed (route::automatic stays automatic: the
// fingerprint every rank compares is made from the shape and the choice) and the choice made.
struct served_call {
  call_shape shape;
  call_choice choice;
};

// A refusal made before its call had a shape: the publisher's code and reason (and a stop's
// failure: why the ranks that call stopped, and the rank it names first).
struct served_refusal {
  errc code = errc::invalid_argument;
  std::string reason;
  int root = -1;
};

// torchcomms' plan: relay_control_publish's fields, carried as given (RCCLX's numbering:
// op_code 0 shutdown, 1 all_reduce, 2 reduce_scatter, 3 all_gather, 4 all_to_all; dtype and
// red_op ncclDataType_t and ncclRedOp_t values; flags 0).
struct control_plan {
  std::uint32_t op_code = 0;
  std::uint32_t dtype = 0;
  std::uint32_t red_op = 0;
  std::uint32_t flags = 0;
  std::vector<std::int64_t> counts;
  friend bool operator==(const control_plan&, const control_plan&) = default;
};
inline constexpr std::uint32_t control_op_shutdown = 0;
inline constexpr std::uint32_t control_op_count = 5;

// A forward's plan in relay's terms: its calls in the order the helpers make them.
struct forward_plan {
  std::vector<call_shape> calls;
  bool stop = false;  // the last forward: no calls; the consumers end their loop
  friend bool operator==(const forward_plan&, const forward_plan&) = default;
};

namespace detail {

// Appends into a caller's buffer of fixed capacity; `fits()` is false once anything did not.
// `needed()` counts every byte asked for, written or not: what the record takes (an empty buffer
// measures a record without writing it).
class record_writer {
 public:
  explicit record_writer(std::span<std::byte> out) : out_(out) {}
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    needed_ += sizeof(T);
    if (!fits_ || used_ + sizeof(T) > out_.size()) {
      fits_ = false;
      return;
    }
    std::memcpy(out_.data() + used_, &v, sizeof(T));
    used_ += sizeof(T);
  }
  void put_text(const std::string& s, std::size_t most) {
    const std::size_t n = std::min(s.size(), most);
    put(static_cast<std::uint32_t>(n));
    needed_ += n;
    if (!fits_ || used_ + n > out_.size()) {
      fits_ = false;
      return;
    }
    std::memcpy(out_.data() + used_, s.data(), n);
    used_ += n;
  }
  bool fits() const { return fits_; }
  std::size_t size() const { return used_; }
  std::size_t needed() const { return needed_; }

 private:
  std::span<std::byte> out_;
  std::size_t used_ = 0;
  std::size_t needed_ = 0;
  bool fits_ = true;
};

// Reads back what record_writer wrote; `ok()` is false once a read ran past the end (every later
// read then yields zeros).
class record_reader {
 public:
  explicit record_reader(std::span<const std::byte> in) : in_(in) {}
  template <class T>
  T get() {
    T v{};
    if (!ok_ || used_ + sizeof(T) > in_.size()) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, in_.data() + used_, sizeof(T));
    used_ += sizeof(T);
    return v;
  }
  std::string get_text() {
    const auto n = get<std::uint32_t>();
    if (!ok_ || used_ + n > in_.size()) {
      ok_ = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(in_.data() + used_), n);
    used_ += n;
    return s;
  }
  // A count read from the record, refused when it says more than the record could hold.
  std::uint32_t get_length(std::size_t element_bytes) {
    const auto n = get<std::uint32_t>();
    if (ok_ && static_cast<std::size_t>(n) * element_bytes > in_.size() - used_) ok_ = false;
    return ok_ ? n : 0;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return used_ == in_.size(); }

 private:
  std::span<const std::byte> in_;
  std::size_t used_ = 0;
  bool ok_ = true;
};

inline void put_head(record_writer& w, const record_head& h) {
  w.put(static_cast<std::uint32_t>(h.kind));
  w.put(h.publisher);
  w.put(h.sequence);
  w.put(h.capture);
}

inline record_head get_head(record_reader& r) {
  record_head h;
  h.kind = static_cast<record_kind>(r.get<std::uint32_t>());
  h.publisher = r.get<std::uint32_t>();
  h.sequence = r.get<std::uint64_t>();
  h.capture = r.get<std::uint64_t>();
  return h;
}

// Every field of a shape: the options, then what the call is, then its groups and counts.
inline void put_shape(record_writer& w, const call_shape& s) {
  w.put(static_cast<std::uint8_t>(s.route));
  w.put(static_cast<std::uint8_t>(s.precision));
  w.put(static_cast<std::uint8_t>(s.wire));
  w.put(static_cast<std::uint8_t>(s.coll));
  w.put(static_cast<std::uint8_t>(s.mode));
  w.put(static_cast<std::uint8_t>(s.type));
  w.put(static_cast<std::uint8_t>(s.op));
  w.put(static_cast<std::uint8_t>(s.in_place));
  w.put(static_cast<std::int32_t>(s.permille));
  w.put(static_cast<std::int32_t>(s.tiles));
  w.put(s.alignment);
  w.put(s.wire_threshold);
  w.put(static_cast<std::int32_t>(s.ranks));
  w.put(static_cast<std::uint32_t>(s.groups.size()));
  for (const std::vector<int>& g : s.groups) {
    w.put(static_cast<std::uint32_t>(g.size()));
    for (int r : g)
      w.put(static_cast<std::int32_t>(r));
  }
  w.put(static_cast<std::uint32_t>(s.counts.size()));
  for (std::int64_t n : s.counts)
    w.put(n);
}

inline void get_shape(record_reader& r, call_shape& s) {
  s.route = static_cast<route>(r.get<std::uint8_t>());
  s.precision = static_cast<precision>(r.get<std::uint8_t>());
  s.wire = static_cast<wire_format>(r.get<std::uint8_t>());
  s.coll = static_cast<collective>(r.get<std::uint8_t>());
  s.mode = static_cast<mode>(r.get<std::uint8_t>());
  s.type = static_cast<dtype>(r.get<std::uint8_t>());
  s.op = static_cast<reduce_op>(r.get<std::uint8_t>());
  s.in_place = r.get<std::uint8_t>() != 0;
  s.permille = r.get<std::int32_t>();
  s.tiles = r.get<std::int32_t>();
  s.alignment = r.get<std::int64_t>();
  s.wire_threshold = r.get<std::int64_t>();
  s.ranks = r.get<std::int32_t>();
  s.groups.resize(r.get_length(sizeof(std::uint32_t)));
  for (std::vector<int>& g : s.groups) {
    g.resize(r.get_length(sizeof(std::int32_t)));
    for (int& k : g)
      k = r.get<std::int32_t>();
  }
  s.counts.resize(r.get_length(sizeof(std::int64_t)));
  for (std::int64_t& n : s.counts)
    n = r.get<std::int64_t>();
}

inline void put_choice(record_writer& w, const call_choice& c) {
  w.put(static_cast<std::uint8_t>(c.route));
  w.put(static_cast<std::uint8_t>(c.wire.requested));
  w.put(static_cast<std::uint8_t>(c.wire.taken));
  w.put(std::uint8_t{0});
  w.put(static_cast<std::int32_t>(c.permille));
  w.put(static_cast<std::int32_t>(c.tiles));
  w.put(c.wire.bytes);
  w.put(c.wire.threshold_bytes);
}

inline void get_choice(record_reader& r, call_choice& c) {
  c.route = static_cast<route>(r.get<std::uint8_t>());
  c.wire.requested = static_cast<wire_format>(r.get<std::uint8_t>());
  c.wire.taken = static_cast<wire_format>(r.get<std::uint8_t>());
  (void)r.get<std::uint8_t>();
  c.permille = r.get<std::int32_t>();
  c.tiles = r.get<std::int32_t>();
  c.wire.bytes = r.get<std::uint64_t>();
  c.wire.threshold_bytes = r.get<std::uint64_t>();
}

inline void put_forward(record_writer& w, const record_head& h, const forward_plan& p) {
  put_head(w, h);
  w.put(static_cast<std::uint8_t>(p.stop));
  w.put(static_cast<std::uint32_t>(p.calls.size()));
  for (const call_shape& s : p.calls)
    put_shape(w, s);
}

inline status short_record(const char* what) {
  return {errc::system_error, std::string("the plane's record of ") + what +
                                  " is malformed (short or with bytes past its end)"};
}

}  // namespace detail

// Writers: the record's bytes into `out`; false when they do not fit (nothing else is wrong then).
inline std::size_t write_call(std::span<std::byte> out, const record_head& h, const served_call& c,
                              bool& fits) {
  detail::record_writer w(out);
  detail::put_head(w, h);
  detail::put_shape(w, c.shape);
  detail::put_choice(w, c.choice);
  fits = w.fits();
  return w.size();
}

inline std::size_t write_refusal(std::span<std::byte> out, const record_head& h,
                                 const served_refusal& r, bool& fits) {
  detail::record_writer w(out);
  detail::put_head(w, h);
  w.put(static_cast<std::uint32_t>(r.code));
  w.put(static_cast<std::int32_t>(r.root));
  w.put_text(r.reason, 400);
  fits = w.fits();
  return w.size();
}

// Every other call-stream record is its head alone.
inline std::size_t write_head(std::span<std::byte> out, const record_head& h, bool& fits) {
  detail::record_writer w(out);
  detail::put_head(w, h);
  fits = w.fits();
  return w.size();
}

inline std::size_t write_forward(std::span<std::byte> out, const record_head& h,
                                 const forward_plan& p, bool& fits) {
  detail::record_writer w(out);
  detail::put_forward(w, h, p);
  fits = w.fits();
  return w.size();
}

inline std::size_t write_control(std::span<std::byte> out, const record_head& h,
                                 const control_plan& p, bool& fits) {
  detail::record_writer w(out);
  detail::put_head(w, h);
  w.put(p.op_code);
  w.put(p.dtype);
  w.put(p.red_op);
  w.put(p.flags);
  w.put(static_cast<std::uint32_t>(p.counts.size()));
  for (std::int64_t n : p.counts)
    w.put(n);
  fits = w.fits();
  return w.size();
}

// The bytes of a forward's record: what must fit a plan slot (plane_geometry::plan_bytes).
inline std::size_t forward_plan_bytes(const forward_plan& p) {
  detail::record_writer w({});
  detail::put_forward(w, record_head{}, p);
  return w.needed();
}

// The bytes of a control plan's record of `counts` counts: its head and four fields, the number
// of counts, one int64 per count (write_control).
constexpr std::size_t control_plan_bytes(std::size_t counts) {
  return record_head_bytes + 5 * sizeof(std::uint32_t) + counts * sizeof(std::int64_t);
}
// The most counts a control plan may have for its record to fit `plan_bytes`.
constexpr std::uint32_t control_counts_held(std::uint32_t plan_bytes) {
  return plan_bytes < control_plan_bytes(0)
             ? 0
             : static_cast<std::uint32_t>((plan_bytes - control_plan_bytes(0)) /
                                          sizeof(std::int64_t));
}

// Readers: the head of any record, then its body by kind.
inline status read_head(std::span<const std::byte> in, record_head& h) {
  detail::record_reader r(in);
  h = detail::get_head(r);
  return r.ok() ? status{} : detail::short_record("a record's head");
}

inline status read_call(std::span<const std::byte> in, served_call& c) {
  detail::record_reader r(in);
  (void)detail::get_head(r);
  detail::get_shape(r, c.shape);
  detail::get_choice(r, c.choice);
  return r.ok() && r.at_end() ? status{} : detail::short_record("a call");
}

inline status read_refusal(std::span<const std::byte> in, served_refusal& out) {
  detail::record_reader r(in);
  (void)detail::get_head(r);
  out.code = static_cast<errc>(r.get<std::uint32_t>());
  out.root = r.get<std::int32_t>();
  out.reason = r.get_text();
  return r.ok() && r.at_end() ? status{} : detail::short_record("a refusal");
}

inline status read_forward(std::span<const std::byte> in, forward_plan& p) {
  detail::record_reader r(in);
  (void)detail::get_head(r);
  p.stop = r.get<std::uint8_t>() != 0;
  // A shape takes at least 44 bytes: a count past what the record holds is malformed.
  p.calls.resize(r.get_length(44));
  for (call_shape& s : p.calls)
    detail::get_shape(r, s);
  return r.ok() && r.at_end() ? status{} : detail::short_record("a forward's plan");
}

inline status read_control(std::span<const std::byte> in, control_plan& p) {
  detail::record_reader r(in);
  (void)detail::get_head(r);
  p.op_code = r.get<std::uint32_t>();
  p.dtype = r.get<std::uint32_t>();
  p.red_op = r.get<std::uint32_t>();
  p.flags = r.get<std::uint32_t>();
  p.counts.resize(r.get_length(sizeof(std::int64_t)));
  for (std::int64_t& n : p.counts)
    n = r.get<std::int64_t>();
  return r.ok() && r.at_end() ? status{} : detail::short_record("a torchcomms-shaped plan");
}

}  // namespace relay::serve
