// A communicator: one per process, one process per rank. It holds the rank, the node size N,
// the device, a bootstrap and a transport, and turns a rank-local collective call into a plan
// (the same on every rank, cached by the call's shape) and this rank's slice of it.
//
// What the communicator guarantees (docs/multiprocess.md, "Failure semantics"):
//   - Every call reaches the transport's agreement (transport/agreement.hpp), on every rank, also
//     when this rank refuses it: arguments make_plan refuses, buffers that fail this rank's own
//     checks (null, size, alignment, in-place layout, overlap), or communicator::refuse. So the
//     ranks stay in step, a refusal anywhere is an error everywhere (this rank's own status here,
//     errc::peer_error naming it on the others), and no user memory is written anywhere.
//   - Each call carries a fingerprint of the arguments every rank must pass alike (the call's
//     shape: collective, groups, counts, dtype, op, options; the route as taken); ranks whose
//     fingerprints differ make every rank return errc::mismatch. Where the transport judges on
//     the host (shm, nccl), every rank then all-gathers its call's text through the bootstrap,
//     so that the message shows what each rank called.
//   - In place is detected on each active rank from its own pointers and must agree across all
//     active ranks of the call (helpers have no buffers and do not vote).
//
// A call whose plan needs more than the transport's area (transport::area_bytes) runs in pieces
// (plan/pieces.hpp), each its own call of the transport with its own agreement and sequence
// number; the cut is made with the shape's plan and cached with it.
//
// The repeated call (a shape in the cache) allocates nothing and builds no string: the last shape
// used is tried first, by comparing the call's shape as passed with its cached copy; any other
// is found by the hash of the shape (plan/call_shape.hpp), confirmed by the same comparison (a
// collision of hashes is a miss, never a wrong plan). With route::automatic the route is chosen
// on the shape's first call (cost/choose.hpp), from the topology options::machine names then;
// later calls of the same shape reuse it (the topology is no part of the shape, so ranks whose
// topology objects live at different addresses still hit and miss alike).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/bootstrap/exchange.hpp"
#include "relay/comm/announcer.hpp"
#include "relay/cost/choose.hpp"
#include "relay/plan/call_shape.hpp"
#include "relay/plan/make_plan.hpp"
#include "relay/plan/pieces.hpp"
#include "relay/plan/rank_buffers.hpp"
#include "relay/plan/slice.hpp"
#include "relay/transport/transport.hpp"

namespace relay {

struct comm_config {
  int device = 0;
  std::chrono::milliseconds timeout = default_peer_timeout;  // every wait for a peer
  std::size_t plan_cache_entries = 64;                       // least recently used shapes kept
};

namespace detail {

// One call as the caller made it on this rank (what communicator::run writes its arguments
// into).
struct rank_call {
  // What every rank passes alike (the shape; its in-place form unused: the plan is the
  // out-of-place one, see transport.hpp) and the machine route::automatic is priced on.
  plan_request request;
  wire_choice* wire_report = nullptr;  // options::wire_report
  buffer_view send{}, recv{};          // this rank's buffers (empty views on a helper)
  void* stream = nullptr;
  // A call served from a control plane (communicator::serve_call): the choice its publisher
  // made, taken instead of this rank's own (so every rank makes the same plan whatever its cost
  // model's machine), and this rank's own refusal of it (its reason; ok: none).
  const call_choice* chosen = nullptr;
  status refusal;
};

}  // namespace detail

class communicator {
 public:
  // The bootstrap is shared with the transport (which may keep using it).
  inline communicator(std::shared_ptr<bootstrap> boot, std::unique_ptr<relay::transport> transport,
                      comm_config config);

  int rank() const { return boot_->rank(); }
  int size() const { return boot_->size(); }
  int device() const { return config_.device; }
  const comm_config& config() const { return config_; }
  bootstrap& boot() { return *boot_; }
  relay::transport& transport() { return *transport_; }
  const relay::transport& transport() const { return *transport_; }

  // Runs one call of collective `c` (the rank-local collectives in comm/collectives.hpp forward
  // here). The arguments are written into a call record the communicator keeps, reusing its
  // storage, so a repeated call allocates nothing.
  inline status run(collective c, const group_list& groups, buffer_view send, buffer_view recv,
                    std::span<const std::int64_t> counts, dtype type, reduce_op op,
                    const options& opt, void* stream);

  // Registers this rank's buffer [p, p + bytes) with the transport, as NCCL's ncclCommRegister:
  // calls whose buffers lie in registered memory may skip the transport's staging (the ipc
  // transport: docs/ipc-transport.md). Collective: every rank calls it, each with its own buffer
  // (or a null pointer to register nothing this time). The status is this rank's: memory that
  // cannot be registered is refused (errc::invalid_buffer saying why) and the calls that use it
  // are staged, correct either way. Not during graph capture; transports that stage every call
  // accept it and do nothing.
  status register_buffer(void* p, std::size_t bytes) {
    if (status s = announce_step(announced_step::register_buffer); !s) return s;
    return transport_->register_buffer(p, bytes, config_.timeout);
  }
  // Ends the registration that begins at `p` (collective, like register_buffer; null: none this
  // time). No call in flight or captured graph may use the buffer afterwards.
  status deregister_buffer(void* p) {
    if (status s = announce_step(announced_step::deregister_buffer); !s) return s;
    return transport_->deregister_buffer(p, config_.timeout);
  }

  // After capturing calls into a graph: registers the memory their inputs lie in, so that the
  // graph's replays read those inputs where they are instead of staging them (the ipc transport
  // copies a staged input of a small call first; see docs/ipc-transport.md, "Graphs"), as vLLM's
  // register_graph_buffers. Collective; not during capture. The replays are right before and
  // after; memory that cannot be registered stays staged. The graphs' buffers must stay allocated
  // until deregister_graph_inputs, which ends every such registration (replays then stage again).
  status register_graph_inputs() {
    if (status s = announce_step(announced_step::register_graph_inputs); !s) return s;
    return transport_->register_graph_inputs(config_.timeout);
  }
  status deregister_graph_inputs() {
    if (status s = announce_step(announced_step::deregister_graph_inputs); !s) return s;
    return transport_->deregister_graph_inputs(config_.timeout);
  }

  // This rank refuses the call its peers are making now (its own checks failed, say, before it
  // had arguments to pass): it takes part in that call's agreement as a refusal, so every peer
  // returns errc::peer_error naming this rank at once instead of waiting out the timeout.
  // Returns `why` (or the transport's error when the call could not be agreed at all). `stream`:
  // the stream the call would have run on (a stream transport enqueues its part of the
  // agreement there).
  inline status refuse(status why, void* stream = nullptr);
  // Tells the peers this rank gives up on the job: their waits end at once with an error naming
  // it, and every later call here fails. Destroy the communicator afterwards.
  void abort() {
    transport_->abort({errc::peer_error, "rank " + std::to_string(rank()) + " aborted"});
  }
  // What is known now of earlier calls, without waiting: on a stream transport (ipc) a failure
  // its device found after the call returned (the transport stays broken), else the oldest call
  // its device found not to `go` (a peer refused it, ranks called it differently) that no
  // async_status() has returned yet: each such call once, its status naming it (the
  // communicator stays usable); ok where nothing failed.
  status async_status() {
    if (status s = transport_->async_status(); !s) return s;
    return transport_->take_failed_call();
  }

  // Shapes in the plan cache (tests watch it).
  std::size_t cached_shapes() const { return cache_.size(); }
  // The transport's calls so far (the sequence of the last one: every rank's is the same); a call
  // larger than the transport's area makes one per piece (plan/pieces.hpp).
  std::uint64_t calls_made() const { return sequence_; }

  // Who is told of each step before its agreement (comm/announcer.hpp): a control plane, where
  // ranks serve (serve/plane.hpp). Null: nobody.
  void set_announcer(std::shared_ptr<relay::announcer> a) { announcer_ = std::move(a); }
  relay::announcer* announcer() const { return announcer_.get(); }

  // A serving rank (serve/serve.hpp): makes, as a helper with no buffers, the call another rank
  // announced: its shape as that rank passed it and the choice that rank made (taken instead of
  // this rank's own). `refusal` not ok: this rank refuses it, with that reason, in the agreement.
  inline status serve_call(const call_shape& shape, const call_choice& chosen, status refusal,
                           void* stream);

 private:
  // One distinct plan of a call cut into pieces (plan/pieces.hpp), from piece `first` on.
  struct piece_plan {
    std::uint64_t first = 0;
    plan p;
    plan_slice slice;
  };
  struct cached {
    call_shape asked;  // the shape as passed (route not yet chosen): what a hit must equal
    plan p;
    plan_slice slice;
    std::string shape;  // describe(the shape as chosen): what a mismatch message shows
    std::uint64_t fingerprint = 0;
    std::uint64_t last_use = 0;
    // Where the whole plan needs more than the transport's area: the call runs in cut.pieces
    // pieces, with these plans (cut.pieces == 1: whole, pieces empty).
    piece_cut cut;
    std::vector<piece_plan> pieces;
  };
  inline status run(const detail::rank_call& call);
  inline status run_pieces(const cached& c, const detail::rank_call& call, call_context ctx);
  inline status explain_mismatch(const std::string& shape, status verdict);
  inline cached* find(const detail::rank_call& call, std::uint64_t& key);
  std::size_t slots() const { return std::max<std::size_t>(1, config_.plan_cache_entries); }
  inline status prepare(const detail::rank_call& call, std::uint64_t key, std::string shape, plan p,
                        cached*& out);
  inline status agree_refused(const detail::rank_call& call, std::uint64_t fingerprint,
                              const std::string& shape, placement where, status why,
                              const call_choice* choice);
  // Tells the announcer of the step about to be taken; where that fails, the job cannot go on in
  // step (whoever serves would not take it): this rank gives up on it, with the announcer's status.
  inline status announce(const announcement& a);
  status announce_step(announced_step step) {
    if (!announcer_) return {};
    announcement a;
    a.step = step;
    a.sequence = sequence_;
    return announce(a);
  }

  std::shared_ptr<bootstrap> boot_;
  std::unique_ptr<relay::transport> transport_;
  comm_config config_;
  std::uint64_t sequence_ = 0;
  // Slots, never reallocated (reserved at construction), so a cached plan's address is stable
  // while it stays cached (the ipc transport recognises a repeated plan by it); keys_[i] is
  // cache_[i]'s key, scanned without touching the plans.
  std::vector<cached> cache_;
  std::vector<std::uint64_t> keys_;
  std::size_t last_ = 0;
  std::uint64_t uses_ = 0;
  detail::rank_call call_;  // the call run() writes its arguments into
  std::shared_ptr<relay::announcer> announcer_;
};

}  // namespace relay

namespace relay {

namespace detail {

inline std::uint64_t fnv1a(std::string_view text, std::uint64_t h = 0xcbf29ce484222325ull) {
  for (char c : text)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

// What every rank compares in a call's agreement: the hash of its shape as chosen (the text),
// followed, where a wire was asked, by " taken=" and the wire taken (the text shows the wire asked;
// the plan depends on the one taken, which a rank serving another's choice must take alike).
inline std::uint64_t fingerprint_of(std::string_view shape, const wire_choice& w) {
  const std::uint64_t h = fnv1a(shape);
  return w.requested == wire_format::native ? h : fnv1a(name(w.taken), fnv1a(" taken=", h));
}

// Piece j of `pieces` of the call whose fingerprint is `call`: ranks that cut one call alike agree
// on every piece; a piece never agrees with a call that runs whole, nor with another piece.
inline std::uint64_t piece_fingerprint(std::uint64_t call, std::uint64_t j, std::uint64_t pieces) {
  std::uint64_t h = call;
  for (std::uint64_t v : {j, pieces})
    for (int b = 0; b < 64; b += 8)
      h = (h ^ ((v >> b) & 0xff)) * 0x100000001b3ull;
  return h;
}

// A piece's part of a caller's buffer (plan/pieces.hpp): its first run, its runs' total, and how
// they lie.
inline buffer_view piece_view(buffer_view whole, const piece_runs& r, buffer_runs& runs) {
  runs = {std::max<std::uint32_t>(1, r.runs), r.stride};
  return {static_cast<std::byte*>(whole.data) + (whole.data != nullptr ? r.offset : 0),
          r.run_bytes * r.runs};
}

}  // namespace detail

inline communicator::communicator(std::shared_ptr<bootstrap> boot,
                                  std::unique_ptr<relay::transport> transport, comm_config config)
    : boot_(std::move(boot)), transport_(std::move(transport)), config_(config) {
  cache_.reserve(slots());
  keys_.reserve(slots());
}

// After a mismatch verdict on a host transport, which every rank reached from the same records:
// every rank shows the text of its call, so that the message says what each called. Where the
// exchange itself fails, the verdict's own message stands.
inline status communicator::explain_mismatch(const std::string& shape, status verdict) {
  std::vector<std::string> all;
  if (status s = exchange(*boot_, shape, all, config_.timeout); !s) return verdict;
  const std::string& root = all[0];
  std::string differ, first;
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r] != root) {
      if (differ.empty()) first = all[r];
      differ.append(differ.empty() ? "" : ",").append(std::to_string(r));
    }
  if (differ.empty()) return verdict;  // the arguments agree: in place against out of place
  return {errc::mismatch,
          "rank(s) " + differ + " called " + first + "; rank 0 called " + root + " (" +
              verdict.message() + ")",
          std::stoi(differ)};  // the first rank of the list
}

// The cached shape of `call`, or null: the last one used first, compared whole (a repeated call
// hashes nothing), then a scan of the keys for `key`, the call's hash, computed here.
// A served call (call.chosen) hits only a shape cached with the same choice.
inline communicator::cached* communicator::find(const detail::rank_call& call, std::uint64_t& key) {
  const call_shape& asked = call.request;
  auto same = [&](const cached& c) {
    return c.asked == asked && (call.chosen == nullptr || choice_of(c.p) == *call.chosen);
  };
  if (last_ < cache_.size() && same(cache_[last_])) {
    key = keys_[last_];
    return &cache_[last_];
  }
  key = hash(asked);
  for (std::size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == key && same(cache_[i])) {
      last_ = i;
      return &cache_[i];
    }
  return nullptr;
}

// A shape's first call, once its plan is made: the slice, cached in a free slot or in place of
// the least recently used shape.
inline status communicator::prepare(const detail::rank_call& call, std::uint64_t key,
                                    std::string shape, plan p, cached*& out) {
  // Too large for the transport's area: the pieces' plans, each with the whole call's choice.
  call_shape whole = call.request;
  whole.in_place = false;
  const call_choice chosen = choice_of(p);
  const piece_cut cut = cut_into_pieces(whole, chosen, p, transport_->area_bytes());
  std::vector<piece_plan> pieces;
  if (cut.pieces > 1)
    for (piece_shape& part : piece_shapes(whole.counts, cut)) {
      whole.counts = std::move(part.counts);
      piece_plan& pp = pieces.emplace_back();
      pp.first = part.first;
      if (status s = make_plan(whole, chosen, pp.p); !s) return s;
      pp.slice = slice_plan(pp.p, rank(), transport_->wire_ends());
    }
  std::size_t slot = cache_.size();
  for (std::size_t i = 0; i < keys_.size(); ++i)  // a collision of keys: replace that shape
    if (keys_[i] == key) slot = i;
  if (slot == cache_.size() && cache_.size() >= slots())
    slot = static_cast<std::size_t>(
        std::min_element(cache_.begin(), cache_.end(),
                         [](const cached& a, const cached& b) { return a.last_use < b.last_use; }) -
        cache_.begin());
  if (slot == cache_.size()) {
    cache_.emplace_back();
    keys_.push_back(0);
  }
  cached& c = cache_[slot];
  c.asked = call.request;  // the shape; not the machine, which may not outlive the cache
  c.slice = slice_plan(p, rank(), transport_->wire_ends());
  c.p = std::move(p);
  c.fingerprint = detail::fingerprint_of(shape, c.p.wire);
  c.shape = std::move(shape);
  c.cut = cut;
  c.pieces = std::move(pieces);
  keys_[slot] = key;
  last_ = slot;
  out = &c;
  return {};
}

inline status communicator::announce(const announcement& a) {
  status s = announcer_->announce(a);
  if (!s) transport_->abort(s);
  return s;
}

// A call this rank refused before it had a plan still takes part in the call's agreement. Its
// shape and choice (`choice` not null) are announced as any call's; a refusal before the call
// had a shape (communicator::refuse) is announced as that.
inline status communicator::agree_refused(const detail::rank_call& call, std::uint64_t fingerprint,
                                          const std::string& shape, placement where, status why,
                                          const call_choice* choice) {
  if (announcer_) {
    announcement a;
    a.step = choice != nullptr ? announced_step::call : announced_step::refusal;
    a.sequence = sequence_ + 1;
    a.shape = &call.request;
    a.choice = choice;
    a.refusal = &why;
    a.stream = call.stream;
    if (status s = announce(a); !s) {
      ++sequence_;
      return s;
    }
  }
  call_context ctx;
  ctx.placement = where;
  ctx.sequence = ++sequence_;
  ctx.fingerprint = fingerprint;
  ctx.local = std::move(why);
  ctx.timeout = config_.timeout;
  ctx.stream = call.stream;
  status s = transport_->run(ctx);
  if (s.code() == errc::mismatch && transport_->judges_on_host())
    return explain_mismatch(shape, std::move(s));
  return s;
}

inline status communicator::refuse(status why, void* stream) {
  if (why.ok()) why = {errc::invalid_argument, "the caller refused the call"};
  detail::rank_call none;
  none.stream = stream;
  return agree_refused(none, 0, {}, placement::helper, std::move(why), nullptr);
}

inline status communicator::run(collective c, const group_list& groups, buffer_view send,
                                buffer_view recv, std::span<const std::int64_t> counts, dtype type,
                                reduce_op op, const options& opt, void* stream) {
  assign_call(call_.request, c, groups, size(), counts, type, op, opt);
  call_.request.machine = opt.machine;
  call_.wire_report = opt.wire_report;
  call_.send = send;
  call_.recv = recv;
  call_.stream = stream;
  return run(call_);
}

inline status communicator::serve_call(const call_shape& shape, const call_choice& chosen,
                                       status refusal, void* stream) {
  call_.request.call_shape::operator=(shape);
  call_.request.machine = nullptr;
  call_.wire_report = nullptr;
  call_.send = call_.recv = buffer_view{};
  call_.stream = stream;
  call_.chosen = &chosen;
  call_.refusal = std::move(refusal);
  status s = run(call_);
  call_.chosen = nullptr;
  call_.refusal = {};
  return s;
}

inline status communicator::run(const detail::rank_call& call) {
  const plan_request& r = call.request;
  const placement where =
      static_cast<unsigned>(r.type) < all_dtypes.size()
          ? placement_of(r.coll, r.groups, r.counts, size_of(r.type), rank(), call.send, call.recv)
          : placement::helper;
  std::uint64_t key = 0;
  cached* c = find(call, key);
  if (c == nullptr) {
    // The plan is the out-of-place one (see transport.hpp); the shape names the route taken.
    plan_request out_of_place = r;
    out_of_place.in_place = false;
    const call_choice chosen = call.chosen != nullptr ? *call.chosen : choose(out_of_place);
    std::string shape = describe(as_chosen(out_of_place, chosen));
    plan p;
    // Refused arguments are refused inside the agreement: a peer that passed others learns of
    // it (a mismatch), one that passed the same refuses alike.
    if (status s = make_plan(out_of_place, chosen, p); !s)
      return agree_refused(call, detail::fingerprint_of(shape, chosen.wire), shape, where,
                           std::move(s), &chosen);
    if (status s = prepare(call, key, std::move(shape), std::move(p), c); !s) return s;
  }
  c->last_use = ++uses_;
  if (call.wire_report != nullptr) *call.wire_report = c->p.wire;
  if (announcer_) {
    const call_choice made = choice_of(c->p);
    announcement a;
    a.sequence = sequence_ + 1;
    a.rounds = c->cut.pieces;
    a.shape = &call.request;
    a.choice = &made;
    a.stream = call.stream;
    if (status s = announce(a); !s) {
      ++sequence_;
      return s;
    }
  }
  call_context ctx;
  ctx.p = &c->p;
  ctx.slice = &c->slice;
  ctx.send = call.send;
  ctx.recv = call.recv;
  ctx.placement = where;
  ctx.sequence = ++sequence_;
  ctx.fingerprint = c->fingerprint;
  ctx.local = call.refusal.ok() ? validate_rank_buffers(c->p, rank(), call.send, call.recv, where)
                                : call.refusal;
  ctx.timeout = config_.timeout;
  ctx.stream = call.stream;
  const std::uint64_t sequence = ctx.sequence;
  status s;
  if (c->cut.pieces > 1) {
    s = run_pieces(*c, call, std::move(ctx));  // explains its mismatches itself
  } else {
    s = transport_->run(ctx);
    if (s.code() == errc::mismatch && transport_->judges_on_host())
      return explain_mismatch(c->shape, std::move(s));
  }
  return announcer_ && !s ? announcer_->explain(sequence, std::move(s)) : s;
}

// A call cut into pieces: one transport call per piece, each with its own agreement, in order,
// on this rank's parts of the caller's buffers. Every piece carries the call's own refusal, so a
// call refused anywhere is refused at its first piece, and nothing is written: on a host
// transport every rank stops there (the same verdict everywhere); on a stream transport every
// rank makes every piece (their devices judge; the later pieces of a call whose first did not go
// are void there, transport.hpp), so ranks that cut the call alike count its pieces alike, and
// this rank returns its first failure. A failure in a later piece (a peer lost, a timeout) leaves
// the pieces before it written.
inline status communicator::run_pieces(const cached& c, const detail::rank_call& call,
                                       call_context ctx) {
  const plan_request& r = call.request;
  const int es = size_of(r.type);
  const bool host = transport_->judges_on_host();
  status first;  // a stream transport's first failure (this rank's refusal)
  std::size_t part = 0;
  for (std::uint64_t j = 0; j < c.cut.pieces; ++j) {
    while (part + 1 < c.pieces.size() && c.pieces[part + 1].first <= j)
      ++part;
    ctx.p = &c.pieces[part].p;
    ctx.slice = &c.pieces[part].slice;
    ctx.sequence = j == 0 ? ctx.sequence : ++sequence_;
    ctx.fingerprint = detail::piece_fingerprint(c.fingerprint, j, c.cut.pieces);
    ctx.piece = j;
    ctx.send = detail::piece_view(
        call.send, runs_of_piece(r.coll, r.groups, r.counts, c.cut, j, rank(), es, true),
        ctx.send_runs);
    ctx.recv = detail::piece_view(
        call.recv, runs_of_piece(r.coll, r.groups, r.counts, c.cut, j, rank(), es, false),
        ctx.recv_runs);
    status s = transport_->run(ctx);
    if (s.code() == errc::mismatch && host) return explain_mismatch(c.shape, std::move(s));
    if (!s && (host || transport_->broken())) return s;
    if (!s && first.ok()) first = std::move(s);
  }
  return first;
}

}  // namespace relay
