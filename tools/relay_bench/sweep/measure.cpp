#include "sweep/measure.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <utility>

#include "relay/check/wire_reference.hpp"
#include "relay/cost/choose.hpp"
#include "report/conventions.hpp"
#include "sweep/data.hpp"
#include "sweep/predict.hpp"

namespace relay::bench {

int rotation_sets(std::int64_t per_set, std::int64_t rotate_bytes, int iterations) {
  if (per_set <= 0 || rotate_bytes <= per_set) return 1;
  const std::int64_t wanted = (rotate_bytes + per_set - 1) / per_set;
  return static_cast<int>(
      std::clamp<std::int64_t>(wanted, 1, std::min(std::max(iterations, 1), max_rotation_sets)));
}

int warmup_runs(int warmup, int sets) {
  return std::max(warmup, sets);
}

row sized_row(const call_shape& s, const options& o, std::int64_t size) {
  const int es = size_of(o.type);
  row r;
  r.shape = s;
  r.n = group_count(s.coll, s.active, size, es);
  r.bytes = call_bytes(s.coll, s.active, r.n, es);
  r.count = r.bytes / es;
  // The plans carry fp32 partial sums of 16-bit types (make_plans keeps the default precision):
  // priced at their width.
  const element_widths w = widths_of(o.type);
  r.chosen = resolve_route(s, o.route, o.topo, r.n, es, w);
  r.predicted = predict_seconds(s, r.chosen, o.topo, r.n, es, w);
  r.direct_predicted = predict_seconds(s, route::direct, o.topo, r.n, es, w);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

namespace {

// The row's prediction on the wire relay's plans took, once its forms ran: every executor's row
// loop ends here. The forms take the same wire (make_plan decides it from the counts, not the
// form), so the out-of-place one, which always runs, stands for both.
void predict_on_taken_wire(row& r, const options& o) {
  r.predicted = predict_seconds(r.shape, r.chosen, o.topo, r.n, o.type, r.out_of_place.relay.wire);
}

constexpr std::uint64_t align_up(std::uint64_t x, std::uint64_t a) {
  return (x + a - 1) / a * a;
}

}  // namespace

std::vector<rank_layout> buffer_layout(const call_shape& s,
                                       const std::vector<std::vector<int>>& groups, std::int64_t n,
                                       int es, bool in_place) {
  std::vector<rank_layout> out;
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t k = 0; k < groups[g].size(); ++k) {
      rank_layout l;
      l.rank = groups[g][k];
      l.group = static_cast<int>(g);
      l.index = static_cast<int>(k);
      l.in_bytes = static_cast<std::uint64_t>(input_elements(s.coll, s.active, n) * es);
      l.out_bytes = static_cast<std::uint64_t>(output_elements(s.coll, s.active, n) * es);
      if (in_place) {
        const in_place_offsets at = in_place_layout(s.coll, l.index, n);
        l.in_at = static_cast<std::uint64_t>(at.input * es);
        l.out_at = static_cast<std::uint64_t>(at.output * es);
      } else {
        l.out_at = align_up(l.in_bytes, 256);
      }
      l.region = align_up(std::max(l.in_at + l.in_bytes, l.out_at + l.out_bytes), 256);
      out.push_back(l);
    }
  return out;
}

namespace {

// Every active rank's buffers, `sets` times over, in one allocation per rank.
class buffer_sets {
 public:
  buffer_sets(backend& b, std::vector<rank_layout> ranks, int sets)
      : backend_(b), ranks_(std::move(ranks)), sets_(sets) {}
  buffer_sets(const buffer_sets&) = delete;
  buffer_sets& operator=(const buffer_sets&) = delete;
  ~buffer_sets() {
    for (std::size_t i = 0; i < arenas_.size(); ++i)
      if (arenas_[i] != nullptr) backend_.deallocate(ranks_[i].rank, arenas_[i]);
  }

  status allocate() {
    for (const rank_layout& l : ranks_) {
      const std::uint64_t bytes = l.region * static_cast<std::uint64_t>(sets_);
      arenas_.push_back(backend_.allocate(l.rank, bytes));
      if (arenas_.back() == nullptr)
        return {errc::out_of_memory, "no memory for " + std::to_string(bytes) +
                                         " bytes of buffers on rank " + std::to_string(l.rank)};
    }
    return {};
  }

  const std::vector<rank_layout>& ranks() const { return ranks_; }
  int sets() const { return sets_; }
  std::byte* input(std::size_t i, int set) const { return base(i, set) + ranks_[i].in_at; }
  std::byte* output(std::size_t i, int set) const { return base(i, set) + ranks_[i].out_at; }

 private:
  std::byte* base(std::size_t i, int set) const {
    return static_cast<std::byte*>(arenas_[i]) + ranks_[i].region * static_cast<std::uint64_t>(set);
  }

  backend& backend_;
  std::vector<rank_layout> ranks_;
  int sets_;
  std::vector<void*> arenas_;
};

// The plans of one call: one for fused and single, one per group for parallel.
// `native`: on the native wire whatever --wire says (the baseline).
status make_plans(const call_shape& s, const options& o, std::int64_t n, route r, bool in_place,
                  std::vector<plan>& plans, bool native = false) {
  const std::vector<std::vector<int>> groups = call_groups(s);
  plan_request q = request_for(plan_spec(s, r), {}, {});
  q.type = o.type;
  q.wire = native ? wire_format::native : o.wire;
  q.wire_threshold = o.wire_threshold;
  q.machine = &o.topo;
  q.op = reduces(s.coll) ? o.op : reduce_op::sum;
  q.in_place = in_place;
  q.alignment = o.alignment;
  const std::size_t count = s.mode == run_mode::parallel ? groups.size() : 1;
  plans.assign(count, plan{});
  for (std::size_t i = 0; i < count; ++i) {
    q.groups = s.mode == run_mode::parallel ? std::vector<std::vector<int>>{groups[i]} : groups;
    q.counts.assign(q.groups.size(), n);
    if (status st = make_plan(q, plans[i]); !st) return st;
  }
  return {};
}

// The jobs of one call on buffer set `set`: each plan gets the buffers of the ranks it runs.
std::vector<job> jobs_for(const std::vector<plan>& plans, const buffer_sets& buffers, int set,
                          int ranks) {
  std::vector<job> jobs(plans.size());
  for (std::size_t j = 0; j < plans.size(); ++j) {
    jobs[j].p = &plans[j];
    jobs[j].inputs.assign(static_cast<std::size_t>(ranks), buffer_view{});
    jobs[j].outputs.assign(static_cast<std::size_t>(ranks), buffer_view{});
  }
  const std::vector<rank_layout>& ranks_of = buffers.ranks();
  for (std::size_t i = 0; i < ranks_of.size(); ++i) {
    const rank_layout& l = ranks_of[i];
    job& jb = jobs[plans.size() == 1 ? 0 : static_cast<std::size_t>(l.group)];
    const auto r = static_cast<std::size_t>(l.rank);
    jb.inputs[r] = {buffers.input(i, set), l.in_bytes};
    jb.outputs[r] = {buffers.output(i, set), l.out_bytes};
  }
  return jobs;
}

class form_measurer {
 public:
  form_measurer(backend& b, const options& o, const row& r, buffer_sets& buffers, bool in_place)
      : backend_(b), options_(o), row_(r), buffers_(buffers), in_place_(in_place) {}

  // Writes every set's inputs (the same data in each).
  status write_inputs(int first_set, int last_set) {
    std::vector<std::byte> host;
    for (std::size_t i = 0; i < buffers_.ranks().size(); ++i) {
      const rank_layout& l = buffers_.ranks()[i];
      host.resize(l.in_bytes);
      fill_input(options_.type, options_.seed, l.rank,
                 static_cast<std::int64_t>(l.in_bytes) / size_of(options_.type), host.data());
      for (int set = first_set; set < last_set; ++set)
        if (status s = backend_.write(l.rank, buffers_.input(i, set), host.data(), l.in_bytes); !s)
          return s;
    }
    return {};
  }

  // The checked run on set 0, then warm-up and timed runs rotating through the sets.
  status measure(const std::vector<plan>& plans, form_result& out) {
    const int sets = buffers_.sets();
    std::vector<std::vector<job>> jobs;
    for (int set = 0; set < sets; ++set)
      jobs.push_back(jobs_for(plans, buffers_, set, row_.shape.ranks));
    out = form_result{};
    out.ran = true;
    out.wire = plans.front().wire.taken;
    if (options_.check) {
      if (status s = checked_run(jobs[0], out); !s) return s;
    }
    // Warm-up runs every set at least once: nothing a first run does (page faults, an executor's
    // preparation of a plan for new buffers) falls into the timed runs.
    for (int i = 0; i < warmup_runs(options_.warmup, sets); ++i)
      if (status s = backend_.run(jobs[static_cast<std::size_t>(i % sets)]); !s) return s;
    std::vector<double> times;
    timer& clock = backend_.clock();
    for (int i = 0; i < options_.iterations; ++i) {
      const auto& call = jobs[static_cast<std::size_t>(i % sets)];
      clock.start();
      status s = backend_.run(call);
      clock.stop();
      if (!s) return s;
      times.push_back(clock.seconds());
    }
    out.seconds = median(std::move(times));
    return {};
  }

 private:
  // Poisons set 0's outputs (where they are not the input itself), writes its inputs afresh (in
  // place, earlier runs changed them), runs once and counts the wrong elements.
  status checked_run(const std::vector<job>& call, form_result& out) {
    const bool output_holds_input = in_place_ && row_.shape.coll != collective::all_gather;
    std::vector<std::byte> host;
    for (std::size_t i = 0; i < buffers_.ranks().size(); ++i) {
      const rank_layout& l = buffers_.ranks()[i];
      if (output_holds_input) continue;
      host.assign(l.out_bytes, std::byte{poison_byte});
      if (status s = backend_.write(l.rank, buffers_.output(i, 0), host.data(), l.out_bytes); !s)
        return s;
    }
    if (in_place_)
      if (status s = write_inputs(0, 1); !s) return s;
    if (status s = backend_.run(call); !s) return s;
    const std::vector<std::vector<int>> groups = call_groups(row_.shape);
    out.wrong = 0;
    for (std::size_t i = 0; i < buffers_.ranks().size(); ++i) {
      const rank_layout& l = buffers_.ranks()[i];
      host.resize(l.out_bytes);
      if (status s = backend_.read(l.rank, host.data(), buffers_.output(i, 0), l.out_bytes); !s)
        return s;
      const std::span<const int> group = groups[static_cast<std::size_t>(l.group)];
      const check_result c =
          out.wire == wire_format::native
              ? check_output(row_.shape.coll, options_.type, options_.op, group, l.index, row_.n,
                             options_.seed, host.data())
              : check_output_fp8(row_.shape.coll, options_.type, options_.op, group, l.index,
                                 row_.n, options_.seed, host.data(), fp8_format_of(out.wire),
                                 reference::wire_hops(row_.shape.coll, call.front().p->spec.route,
                                                      row_.shape.active));
      if (c.wrong > 0 && out.wrong == 0) out.first_wrong = c.first;
      out.wrong += c.wrong;
      if (out.wire != wire_format::native)
        out.max_relative_error = std::isnan(out.max_relative_error)
                                     ? c.max_relative_error
                                     : std::max(out.max_relative_error, c.max_relative_error);
    }
    return {};
  }

  backend& backend_;
  const options& options_;
  const row& row_;
  buffer_sets& buffers_;
  bool in_place_;
};

}  // namespace

std::int64_t row_runner::host_memory(const row& r) const {
  const int es = size_of(options_.type);
  const std::vector<std::vector<int>> groups = call_groups(r.shape);
  const std::int64_t rotate =
      options_.rotate_bytes >= 0 ? options_.rotate_bytes : 2 * backend_.cache_bytes();
  std::int64_t buffers = 0;
  std::vector<std::uint64_t> scratch;  // per (plan, rank): the largest of the routes run
  std::int64_t executors = 1;
  for (bool in_place : {false, true}) {
    if (in_place && !measures_in_place(options_, r.shape.coll)) continue;
    std::int64_t per_set = 0, staging = 0;
    for (const rank_layout& l : buffer_layout(r.shape, groups, r.n, es, in_place)) {
      per_set += static_cast<std::int64_t>(l.region);
      staging = std::max<std::int64_t>(
          staging, static_cast<std::int64_t>(std::max(l.in_bytes, l.out_bytes)));
    }
    buffers =
        std::max(buffers, per_set * rotation_sets(per_set, rotate, options_.iterations) + staging);
    // The route taken (on --wire), and the direct baseline (native).
    for (const auto& [rt, baseline] :
         {std::pair{r.chosen, false}, std::pair{route::direct, true}}) {
      if (rt == route::direct && r.base != base_source::direct) continue;
      std::vector<plan> plans;
      if (!make_plans(r.shape, options_, r.n, rt, in_place, plans, baseline)) continue;
      executors = std::max(executors, static_cast<std::int64_t>(plans.size()));
      std::size_t at = 0;
      for (const plan& p : plans)
        for (const std::uint64_t bytes : p.scratch_bytes) {
          if (scratch.size() <= at) scratch.resize(at + 1, 0);
          scratch[at] = std::max(scratch[at], bytes);
          ++at;
        }
    }
  }
  std::int64_t total = buffers;
  for (const std::uint64_t bytes : scratch)
    total += static_cast<std::int64_t>(bytes);
  // Per executor (parallel mode runs one per group): its rank threads, its plan and the
  // allocator's bookkeeping (relay-plan's allowance for its one executor).
  constexpr std::int64_t overhead = std::int64_t{16} << 20;
  return total + overhead * executors;
}

status row_runner::measure(row& r) {
  const int es = size_of(options_.type);
  const std::vector<std::vector<int>> groups = call_groups(r.shape);
  const std::int64_t rotate =
      options_.rotate_bytes >= 0 ? options_.rotate_bytes : 2 * backend_.cache_bytes();
  for (bool in_place : {false, true}) {
    if (in_place && !measures_in_place(options_, r.shape.coll)) continue;
    form_pair& result = in_place ? r.in_place : r.out_of_place;
    std::vector<rank_layout> ranks = buffer_layout(r.shape, groups, r.n, es, in_place);
    std::int64_t per_set = 0;
    for (const rank_layout& l : ranks)
      per_set += static_cast<std::int64_t>(l.region);
    const int sets = rotation_sets(per_set, rotate, options_.iterations);
    r.sets = sets;
    buffer_sets buffers(backend_, std::move(ranks), sets);
    if (status s = buffers.allocate(); !s) return s;
    form_measurer m(backend_, options_, r, buffers, in_place);
    if (status s = m.write_inputs(0, sets); !s) return s;

    std::vector<plan> plans;
    if (status s = make_plans(r.shape, options_, r.n, r.chosen, in_place, plans); !s) return s;
    if (status s = m.measure(plans, result.relay); !s) return s;

    switch (r.base) {
      case base_source::none: break;
      case base_source::direct:
        if (r.chosen == route::direct && result.relay.wire == wire_format::native) {
          result.base = result.relay;  // the route taken is the baseline itself
          break;
        }
        if (status s = make_plans(r.shape, options_, r.n, route::direct, in_place, plans, true); !s)
          return s;
        if (status s = m.measure(plans, result.base); !s) return s;
        break;
      case base_source::nccl: {
        const measure_settings settings{options_.warmup, options_.iterations, options_.check,
                                        options_.seed};
        if (status s = vendor_->measure(r.shape.coll, options_.type, options_.op, groups, r.n,
                                        in_place, settings, result.base);
            !s)
          return s;
        break;
      }
    }
  }
  predict_on_taken_wire(r, options_);
  return {};
}

int refuse_rank_job(std::string_view executor, const options& o,
                    const std::vector<call_shape>& shapes, int job_size, bool parallel) {
  for (const call_shape& s : shapes)
    if (s.mode == run_mode::parallel && !parallel) {
      fmt::print(stderr, "relay-bench: {} runs fused and single, not parallel\n", executor);
      return exit_usage;
    }
  if (job_size >= 0 && job_size != o.ranks) {
    fmt::print(stderr, "relay-bench: {}: the job has {} processes but N = {}; pass -N {}\n",
               executor, job_size, o.ranks, job_size);
    return exit_usage;
  }
  return 0;
}

int run_rank_rows(const options& o, const std::vector<call_shape>& shapes,
                  const std::vector<std::int64_t>& sizes, const run_info& info,
                  const rank_job& job) {
  std::int64_t wrong = 0;
  // --csv: the lead's rows, each flushed as it is done (a run cut short keeps them); "-" is
  // standard output, in place of the tables' rows.
  std::FILE* csv = nullptr;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(nullptr, &std::fclose);
  if (job.lead && !o.csv_path.empty()) {
    if (o.csv_path != "-") file.reset(std::fopen(o.csv_path.c_str(), "w"));
    csv = o.csv_path == "-" ? stdout : file.get();
    if (csv == nullptr) {
      fmt::print(stderr, "relay-bench: cannot write {}\n", o.csv_path);
      return exit_failed;
    }
    print_csv_header(csv);
  }
  const bool table = job.lead && csv != stdout;
  for (const call_shape& s : shapes) {
    const bool with_vendor = job.with_vendor && job.with_vendor(s);
    if (table) print_table_header(stdout, o, s, with_vendor ? job.vendor : job.baseline, info);
    for (std::int64_t size : sizes) {
      row r = sized_row(s, o, size);
      r.base = with_vendor           ? base_source::nccl
               : job.direct_baseline ? base_source::direct
                                     : base_source::none;
      for (bool in_place : {false, true}) {
        if (in_place && !measures_in_place(o, s.coll)) continue;
        form_pair& forms = in_place ? r.in_place : r.out_of_place;
        for (bool v : {false, true}) {
          if (v && r.base == base_source::none) continue;
          form_result& f = v ? forms.base : forms.relay;
          if (v && r.base == base_source::direct && r.chosen == route::direct &&
              forms.relay.wire == wire_format::native) {
            f = forms.relay;  // the route taken is the baseline itself
            continue;
          }
          if (status st = job.measure(r, in_place, v, f); !st) {
            fmt::print(stderr, "relay-bench: {}{} A={} {} {} B{}: {}\n", job.who, name(s.coll),
                       s.active, name(s.mode), r.bytes,
                       !v                              ? ""
                       : r.base == base_source::direct ? " (direct)"
                                                       : " (NCCL)",
                       st.to_string());
            return exit_failed;
          }
          if (f.wrong > 0) {
            wrong += f.wrong;
            if (job.lead)
              print_wrong_form(!v                              ? ""
                               : r.base == base_source::direct ? "direct "
                                                               : "NCCL ",
                               r, in_place, f);
          }
        }
      }
      predict_on_taken_wire(r, o);
      if (table) {
        print_table_row(stdout, o, r);
        std::fflush(stdout);
      }
      if (csv != nullptr) {
        print_csv_rows(csv, o, r);
        std::fflush(csv);
      }
    }
  }
  if (job.lead) print_wrong_total(stdout, o.check, wrong);
  return wrong > 0 ? exit_wrong : 0;
}

}  // namespace relay::bench
