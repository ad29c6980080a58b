// Trace lint: checks that a written trace obeys the rules viewers rely on (docs/reference/
// traces.md 1c item 2), without a viewer. Used by the tests and by CI on traces the CLI writes.
//
// Both functions return OK or the *first* problem as a ParseError whose message names the packet
// or event index (0-based) and what is wrong, e.g.
//   "perfetto packet 7: SLICE_END on track 3 with no open slice".
// End-of-trace problems (an unclosed slice, a flow with one end) are reported as "end of trace".
//
// The lints are stricter than the viewers where our writers promise more: time must not decrease
// per track in file order (the formats allow unsorted events), and every track must be declared
// before its first use.

#ifndef PODSIM_TRACES_TRACE_LINT_H_
#define PODSIM_TRACES_TRACE_LINT_H_

#include <string_view>

#include "sim/status.h"

namespace podsim::traces {

// Checks a Perfetto protobuf trace (a serialized perfetto.protos.Trace), packet by packet, with
// the perfetto_min.proto subset:
//  - the file is a sequence of Trace.packet fields that each parse, with no unknown fields
//    anywhere (a field-number or wire-type bug in a writer shows up as an unknown field);
//  - every packet has a non-zero trusted_packet_sequence_id; the first packet of each sequence
//    sets SEQ_INCREMENTAL_STATE_CLEARED; a packet that uses interned ids sets
//    SEQ_NEEDS_INCREMENTAL_STATE and every iid resolves in the sequence's current interned data;
//  - track descriptors have a non-zero, unique uuid, a name (process_name for processes), and a
//    parent_uuid declared before them;
//  - track events have a timestamp (<= INT64_MAX ns), a type and a track_uuid declared before;
//    SLICE_BEGIN and INSTANT have a name and a category; BEGIN/END balance per track; timestamps
//    do not decrease per track; COUNTER events (with a value) only on counter tracks, slices and
//    instants never on them; debug annotations have a name and a value;
//  - every flow id (flow_ids or terminating_flow_ids) has at least two endpoints, and every track
//    ends with no open slice.
sim::Status LintPerfetto(std::string_view bytes);

// Checks a Chrome Trace Event Format JSON trace (an object with "traceEvents", or a bare array):
//  - every event is an object with a one-letter ph of B, E, X, i, I, C, s, t, f or M, a non-empty
//    name and an integer pid; all but M have a numeric ts >= 1 (us); B, E, X, i, I, s, t, f have a
//    non-empty cat and an integer tid; X has dur >= 0; C has numeric args;
//  - M events: process_name/thread_name with a non-empty args.name, *_sort_index with an integer
//    args.sort_index; every pid (and (pid, tid) of thread-scoped events) is named by an M event
//    before it is used;
//  - B/E are LIFO per (pid, tid), and an E repeats its B's name and cat; B/E also nest across
//    the whole file in file order, since DevTools pairs them with one stack for all threads; X
//    slices nest per (pid, tid); ts does not decrease per (pid, tid), or per (pid, name) for
//    counters;
//  - v1 flows: s/t/f have an id; f has "bp":"e"; each flow event binds to the slice (B or X) that
//    started last on its (pid, tid), with the same ts and cat (DevTools binds by exactly that);
//    every flow (cat, name, id) has one s and at least one f, and the s comes first in the file;
//  - every slice is closed at the end of the trace.
sim::Status LintChromeJson(std::string_view text);

}  // namespace podsim::traces

#endif  // PODSIM_TRACES_TRACE_LINT_H_
