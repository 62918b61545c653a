// The GPU executor's timing of its runs on the devices (gpu_options::time_runs, time_actions):
// timing events at the start and end of every lane a run uses, for the run's device time, and,
// as a diagnostic, an event after every launch and memcpy, for where that time goes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "relay/core/no_copy.hpp"
#include "relay/core/status.hpp"
#include "relay/exec/gpu/program.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"

namespace relay {

// One launch or memcpy of a timed run (gpu_options::time_actions): its lane, what it was, how
// many descriptors it took, and when it started and ended on the device, in microseconds from
// the run's start on that lane (an action starts when the one before it on its lane ended).
struct gpu_action_time {
  int lane = 0;
  const char* what = "";
  std::uint32_t count = 0;
  double start_us = 0, end_us = 0;
};

namespace gpu {

// Owns its events: not copyable.
class run_tracer : no_copy {
 public:
  ~run_tracer() {
    const device_guard keep;
    for (const trace_event& t : events_)
      if (rt::set_device(t.device) == rt::success) (void)rt::event_destroy(t.event);
  }

  void open(std::size_t lanes) { timed_lane_.assign(lanes, false); }

  // A run begins: its actions are traced afresh.
  void begin() { traced_.clear(); }

  // Records one timing event (start or end) on every lane `prog` uses; `current` tracks the
  // selected device.
  status mark(std::vector<lane>& lanes, const program& prog, rt::event_t lane::*which,
              int& current) {
    for (std::size_t l = 0; l < lanes.size(); ++l) {
      timed_lane_[l] = prog.uses_lane[l];
      if (!prog.uses_lane[l]) continue;
      lane& ln = lanes[l];
      if (ln.device != current) {
        current = ln.device;
        if (rt::error_t e = rt::set_device(current); e != rt::success)
          return failure("selecting the device", current, e);
      }
      if (rt::error_t e = rt::event_record(ln.*which, ln.stream); e != rt::success)
        return failure("recording a timing event", ln.device, e);
    }
    return {};
  }

  // An event after launch or memcpy `a` on its lane (the lane's device is current), created the
  // first time it is needed. Waits and records are not traced.
  status trace(std::vector<lane>& lanes, const action& a, const char* what) {
    if (a.what == action::kind::wait || a.what == action::kind::record) return {};
    lane& ln = lanes[static_cast<std::size_t>(a.lane)];
    if (traced_.size() == events_.size()) {
      rt::event_t ev = nullptr;
      if (rt::error_t e = rt::event_create(&ev, true); e != rt::success)
        return failure("creating a timing event", ln.device, e);
      events_.push_back({ev, ln.device});
    } else if (events_[traced_.size()].device != ln.device) {
      rt::event_t& ev = events_[traced_.size()].event;
      (void)rt::event_destroy(ev);  // an event of another device: made again on this one
      ev = nullptr;
      if (rt::error_t e = rt::event_create(&ev, true); e != rt::success)
        return failure("creating a timing event", ln.device, e);
      events_[traced_.size()].device = ln.device;
    }
    const std::size_t k = traced_.size();
    if (rt::error_t e = rt::event_record(events_[k].event, ln.stream); e != rt::success)
      return failure("recording a timing event", ln.device, e);
    traced_.push_back({a.lane, what, a.count, k});
    return {};
  }

  // Seconds the last run took on the devices: per lane it used, from its first operation's
  // start to its last one's end, the longest lane's. Waits for the run; -1 where the runtime
  // cannot say.
  double seconds(const std::vector<lane>& lanes) const {
    std::vector<timed_span> spans;
    for (std::size_t l = 0; l < lanes.size(); ++l)
      if (timed_lane_[l])
        spans.push_back({lanes[l].device, lanes[l].timing_start, lanes[l].timing_end});
    return longest_seconds(spans);
  }

  // Every traced action of the last run with its device times (after waiting for the run to
  // end); empty if the runtime cannot say.
  std::vector<gpu_action_time> actions(const std::vector<lane>& lanes) const {
    std::vector<gpu_action_time> out;
    const device_guard keep;
    std::vector<rt::event_t> last(lanes.size(), nullptr);
    for (const traced_action& t : traced_) {
      const lane& ln = lanes[static_cast<std::size_t>(t.lane)];
      rt::event_t& before = last[static_cast<std::size_t>(t.lane)];
      float start = 0, end = 0;
      if (rt::set_device(ln.device) != rt::success ||
          rt::event_synchronize(events_[t.event].event) != rt::success ||
          (before != nullptr &&
           rt::event_elapsed_ms(&start, ln.timing_start, before) != rt::success) ||
          rt::event_elapsed_ms(&end, ln.timing_start, events_[t.event].event) != rt::success) {
        (void)rt::get_last_error();
        return {};
      }
      before = events_[t.event].event;
      out.push_back({t.lane, t.what, t.count, start * 1e3, end * 1e3});
    }
    return out;
  }

 private:
  struct traced_action {
    int lane = 0;
    const char* what = "";
    std::uint32_t count = 0;
    std::size_t event = 0;
  };
  struct trace_event {
    rt::event_t event = nullptr;
    int device = 0;
  };
  std::vector<bool> timed_lane_;       // lanes the last run marked with timing events
  std::vector<traced_action> traced_;  // the last run's actions, in issue order
  std::vector<trace_event> events_;    // an event per action, reused
};

}  // namespace gpu
}  // namespace relay
