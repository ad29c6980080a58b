// Loads Chrome JSON traces written by podsim in the Chrome DevTools trace engine (the npm package
// @paulirish/trace_engine, the Performance panel's model) and checks that it sees what podsim
// wrote: the processes and threads by name, every slice, every flow with both ends and as the
// initiator link the Performance panel draws its arrows from, the counters as the value slices
// of their threads (the engine has no model of "C" events: chrome_json_writer.h), and the
// processes' sort indices in stage and coordinate order (issues 7 and 17;
// docs/reference/traces.md 1c item 3).
//
//   node tests/trace_engine/check.mjs PATH/TO/podsim
//
// Runs a small pipelined training step, an inference step and a collective with --trace FILE.json
// in a temporary
// directory, so the test needs nothing but the podsim binary. Exit code 0: all checks pass; 1: a
// check failed (each failure is printed); 2: usage or the engine is not installed (run
// `npm ci --prefix tests/trace_engine`). run_check.sh skips (77) when node is missing.

import {execFileSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Debian 12's node (18) has no URL.parse, which the engine calls; the same as the standard one.
if (typeof URL.parse !== 'function') {
  URL.parse = (url, base) => {
    try {
      return new URL(url, base);
    } catch {
      return null;
    }
  };
}

let analyzeTrace;
try {
  ({analyzeTrace} = await import('@paulirish/trace_engine/analyze-trace.mjs'));
} catch (e) {
  console.error(`trace_engine is not installed (${e.code ?? e.message}); ` +
                'run: npm ci --prefix tests/trace_engine');
  process.exit(2);
}

const podsim = process.argv[2];
if (!podsim || !fs.existsSync(podsim)) {
  console.error('usage: node check.mjs PATH/TO/podsim');
  process.exit(2);
}

const failures = [];
function check(condition, message) {
  if (!condition) failures.push(message);
  return condition;
}

// What podsim wrote, read straight from the JSON: names, slices per thread, flow ids.
function summarize(events) {
  const processes = new Map();  // pid -> name
  const sortIndex = new Map();  // pid -> process_sort_index
  const threads = new Map();    // "pid:tid" -> name
  const counters = new Map();   // "pid:tid" -> number of "C" events
  const slices = new Map();     // "pid:tid" -> number of slices (X, or B of a B/E pair)
  const flows = new Map();      // id -> {s: [pid, tid, ts], f: [pid, tid, ts]}
  for (const e of events) {
    const key = `${e.pid}:${e.tid}`;
    if (e.ph === 'M' && e.name === 'process_name') processes.set(e.pid, e.args.name);
    if (e.ph === 'M' && e.name === 'process_sort_index') sortIndex.set(e.pid, e.args.sort_index);
    if (e.ph === 'M' && e.name === 'thread_name') threads.set(key, e.args.name);
    if (e.ph === 'C') counters.set(key, (counters.get(key) ?? 0) + 1);
    if (e.ph === 'X' || e.ph === 'B') slices.set(key, (slices.get(key) ?? 0) + 1);
    if (e.ph === 's' || e.ph === 'f') {
      const flow = flows.get(e.id) ?? {};
      flow[e.ph] = [e.pid, e.tid, e.ts];
      flows.set(e.id, flow);
    }
  }
  return {processes, sortIndex, threads, slices, counters, flows};
}

// Checks one trace against the engine; `expect` holds the run's own expectations.
async function checkTrace(label, file, expect) {
  const events = JSON.parse(fs.readFileSync(file, 'utf8')).traceEvents;
  const wrote = summarize(events);
  const {parsedTrace} = await analyzeTrace(file);
  const data = parsedTrace.data ?? parsedTrace;  // The shape changed across engine versions.
  const meta = data.Meta;
  const fail = (message) => `${label}: ${message}`;

  check(meta.traceIsGeneric, fail('the engine did not load it as a generic trace'));
  check(data.Warnings.perEvent.size === 0,
        fail(`the engine warned about ${data.Warnings.perEvent.size} events`));

  // Processes and threads, by name, exactly as declared.
  const seenProcesses = new Map();
  for (const [pid, event] of meta.processNames) seenProcesses.set(pid, event.args.name);
  check(seenProcesses.size === wrote.processes.size,
        fail(`engine has ${seenProcesses.size} named processes, podsim wrote ` +
             `${wrote.processes.size}`));
  for (const [pid, name] of wrote.processes) {
    check(seenProcesses.get(pid) === name,
          fail(`process ${pid}: engine says '${seenProcesses.get(pid)}', podsim wrote '${name}'`));
  }
  const names = [...wrote.processes.values()];
  for (const pattern of expect.processes) {
    check(names.some((n) => pattern.test(n)), fail(`no process matches ${pattern}`));
  }
  check(names.length === expect.processCount,
        fail(`${names.length} processes, expected ${expect.processCount}: ${names.join('; ')}`));

  // Every slice podsim wrote is an entry of its thread in the engine (none dropped).
  const renderer = data.Renderer.processes;
  let entries = 0;
  for (const [key, count] of wrote.slices) {
    const [pid, tid] = key.split(':').map(Number);
    const thread = renderer.get(pid)?.threads.get(tid);
    if (!check(thread, fail(`thread ${key} ('${wrote.threads.get(key)}') is missing`))) continue;
    check(thread.name === wrote.threads.get(key),
          fail(`thread ${key}: engine says '${thread.name}', podsim wrote ` +
               `'${wrote.threads.get(key)}'`));
    check(thread.entries.length === count,
          fail(`thread ${key} ('${thread.name}'): ${thread.entries.length} entries, podsim ` +
               `wrote ${count} slices`));
    entries += thread.entries.length;
  }
  const threadNames = new Set(wrote.threads.values());
  for (const name of expect.threads) {
    check(threadNames.has(name), fail(`no thread named '${name}'`));
  }

  // Every flow has both ends, bound to the slices podsim bound them to. The engine keys a flow's
  // events by timestamp (FlowsHandler), so it cannot show a flow whose ends start at the same
  // time -- a collective's send and receive do -- and drops those; Perfetto shows them.
  const flows = data.Flows.flows;
  let sameTime = 0;
  for (const flow of wrote.flows.values()) {
    check(flow.s && flow.f, fail(`podsim wrote a flow with one end: ${JSON.stringify(flow)}`));
    if (flow.s && flow.f && flow.s[2] === flow.f[2]) ++sameTime;
  }
  check(flows.length === wrote.flows.size - sameTime,
        fail(`engine found ${flows.length} flows, podsim wrote ${wrote.flows.size} (` +
             `${sameTime} with both ends at one time)`));
  // The panel draws a flow as an arrow from an entry's initiator (InitiatorsHandler), from the
  // slice podsim bound the flow's `s` to.
  const starts = new Set([...wrote.flows.values()].filter((f) => f.s).map((f) => f.s.join(':')));
  const initiated = data.Initiators.initiatorToEvents;
  let crossProcess = 0;
  for (const flow of flows) {
    if (!check(flow.length === 2, fail(`a flow with ${flow.length} events`))) continue;
    if (flow[0].pid !== flow[1].pid) ++crossProcess;
    const [from, to] = flow;
    check(starts.has([from.pid, from.tid, from.ts].join(':')),
          fail(`flow from '${from.name}' (pid ${from.pid}, tid ${from.tid}, ${from.ts} ` +
               'us) does not start where podsim started one'));
    check(initiated.get(from)?.includes(to),
          fail(`no initiator arrow from '${from.name}' to '${to.name}'`));
  }
  check(crossProcess >= expect.minCrossProcessFlows,
        fail(`${crossProcess} flows between processes, expected at least ` +
             `${expect.minCrossProcessFlows}`));

  // Counters: each counter track podsim wrote "C" events on is a thread of the engine with
  // entries (its value slices; counted with the other slices above), named like the counter.
  const counterThreads = new Map();  // pid -> names of its counter threads with entries
  for (const [key] of wrote.counters) {
    const [pid, tid] = key.split(':').map(Number);
    const thread = renderer.get(pid)?.threads.get(tid);
    if (!check(thread && thread.entries.length > 0,
               fail(`counter '${wrote.threads.get(key)}' (${key}) has no entries in the engine`))) {
      continue;
    }
    counterThreads.set(pid, [...(counterThreads.get(pid) ?? []), thread.name]);
  }
  for (const [pid, name] of wrote.processes) {
    if (name === 'system') continue;
    const names = counterThreads.get(pid) ?? [];
    for (const pattern of expect.counters ?? []) {
      check(names.some((n) => pattern.test(n)),
            fail(`process '${name}': no counter matching ${pattern} in the engine (has: ` +
                 `${names.join(', ')})`));
    }
  }

  // Order: the sort indices put "system" first, then stage, then the coordinates in the
  // process name ("stage 2 (chip 13: dp 0, tp 1)"). The engine does not read sort indices (the
  // Performance panel lists the busiest tracks first), Perfetto and the legacy viewer do.
  if (expect.ordered) {
    const key = (name) => name === 'system' ? [-1] : [...name.matchAll(/(?:stage|dp|tp|fsdp) (\d+)/g)]
        .map((m) => Number(m[1]));
    const byIndex = [...wrote.processes].sort((a, b) => wrote.sortIndex.get(a[0]) -
                                                        wrote.sortIndex.get(b[0]));
    for (let i = 1; i < byIndex.length; ++i) {
      const [a, b] = [key(byIndex[i - 1][1]), key(byIndex[i][1])];
      const less = a.findIndex((v, j) => v !== b[j]);
      check(less >= 0 && a[less] < b[less],
            fail(`'${byIndex[i - 1][1]}' sorts before '${byIndex[i][1]}'`));
    }
  }

  // A step trace spans the step: from 1 us (podsim's origin) to 1 us + the simulated time.
  const bounds = meta.traceBounds;
  if (expect.spanUs !== undefined) {
    check(Math.abs(bounds.min - 1) < 1e-6, fail(`trace starts at ${bounds.min} us, not 1 us`));
    check(Math.abs(bounds.range - expect.spanUs) <= 0.002,
          fail(`trace spans ${bounds.range} us, the step took ${expect.spanUs} us`));
  }
  console.log(`${label}: ${names.length} processes, ${wrote.threads.size} threads, ${entries} ` +
              `slices (counter values included), ${wrote.counters.size} counters, ` +
              `${flows.length} flows (${crossProcess} between chips; ${sameTime} more with ` +
              'both ends at one time, which the engine cannot show) -- as written');
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'podsim-trace-engine-'));
try {
  // A pipelined training step: 4 stages of tp=8 by dp=2, so sends, receives and tp collectives;
  // the step's symmetry leaves one chip per stage to simulate.
  const trainTrace = path.join(dir, 'train.json');
  const train = JSON.parse(execFileSync(podsim, [
    'train', '--system', 'h100:64', '--model', 'llama3-8b:layers=8', '--layout',
    'tp=8,pp=4,dp=2,microbatches=4,order=tp/pp/dp', '--batch-tokens', '64Ki', '--seq', '4096', '--json',
    '--trace', trainTrace,
  ]));
  await checkTrace('train', trainTrace, {
    processes: [/^system$/, /^stage 0 \(chip \d+: dp 0, tp 0\)$/, /^stage 3 \(chip \d+: /],
    processCount: 5,
    threads: ['step', 'compute', 'tp', 'dp', 'pp', 'pp.recv'],
    minCrossProcessFlows: 2 * 3 * 4,  // Activations and gradients, 3 stage boundaries, 4 microbatches.
    counters: [/^HBM$/, /^link to /],
    ordered: true,
    spanUs: train.step_time_s * 1e6,
  });

  // The same step with every chip traced: 64 chips, declared when they first run an op (by chip
  // id at time 0, not in stage order: stage 0 is chips 0-7 and 32-39).
  const everyTrace = path.join(dir, 'every.json');
  execFileSync(podsim, [
    'train', '--system', 'h100:64', '--model', 'llama3-8b:layers=8', '--layout',
    'tp=8,pp=4,dp=2,microbatches=4,order=tp/pp/dp', '--batch-tokens', '64Ki', '--seq', '4096', '--every-chip',
    '--trace', everyTrace,
  ]);
  await checkTrace('train --every-chip', everyTrace, {
    processes: [/^system$/, /^stage 0 \(chip 0: dp 0, tp 0\)$/, /^stage 3 \(chip \d+: dp 1, tp 7\)$/],
    processCount: 65,
    threads: ['step', 'compute', 'tp', 'dp', 'pp', 'pp.recv', 'HBM'],
    minCrossProcessFlows: 2 * 3 * 4 * 16,  // As above, for each of the 16 (dp, tp) chips a stage has.
    counters: [/^HBM$/, /^link to /],
    ordered: true,
  });

  // A decode step of a tensor-parallel replica: one simulated chip, compute and tp streams, flows
  // between them.
  const inferTrace = path.join(dir, 'infer.json');
  const infer = JSON.parse(execFileSync(podsim, [
    'infer', '--system', 'h100:8', '--model', 'llama3-8b', '--layout', 'tp=8', '--phase',
    'decode', '--batch', '8', '--context', '2048', '--json', '--trace', inferTrace,
  ]));
  await checkTrace('infer', inferTrace, {
    processes: [/^system$/, /^decode replica \(chip 0: tp 0\)$/],
    processCount: 2,
    threads: ['step', 'compute', 'tp'],
    minCrossProcessFlows: 0,
    spanUs: infer.step_time_s * 1e6,
  });

  // A collective on a torus: sends and receives per chip, a flow from each send to its receive
  // (both start at once, so the engine shows none of them; the check is that it loads cleanly).
  const collectiveTrace = path.join(dir, 'collective.json');
  execFileSync(podsim, ['collective', '--system', 'tpu-v5e:2x4', '--op', 'all-reduce', '--bytes',
                        '16MiB', '--trace', collectiveTrace]);
  await checkTrace('collective', collectiveTrace, {
    processes: [/^chip 0 /, /^chip 7 /],
    processCount: 8,
    threads: ['send 0', 'recv 0'],
    minCrossProcessFlows: 0,
  });
} finally {
  fs.rmSync(dir, {recursive: true, force: true});
}

for (const failure of failures) console.error(`FAIL ${failure}`);
process.exit(failures.length === 0 ? 0 : 1);
