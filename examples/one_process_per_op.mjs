#!/usr/bin/env node
// A minimal memconform driver, written from docs/IMPLEMENTING.md alone (issue 14 item 6).
//
// Usage: node examples/one_process_per_op.mjs        (the harness: --impl node:examples/one_process_per_op.mjs)
//
// It drives the reference implementation in another process style than `serve`: the driver is
// one long-lived Node process that speaks the JSON Lines protocol, and every op runs in a fresh,
// short-lived `python -m memconform.reference serve` that lives for that op only. The driver keeps
// the state a per-op process cannot: the clock. Each child is told the instant the driver's clock
// shows now (frozen: the same instant; offset: set instant + time elapsed since set_clock), then
// runs the op and exits. Replace runOp() with calls into your own tool to make it your driver.
//
// Environment: the harness starts the driver with the store roots (PI_CODING_AGENT_DIR,
// PI_SHARED_MEMORY_HOME, HOME, XDG_CONFIG_HOME, OCL_SHARED_MEMORY_HOME) and TZ; each child
// inherits them. MEMCONFORM_PYTHON names the interpreter (default: python3).

import { createInterface } from 'node:readline';
import { spawnSync } from 'node:child_process';

const PYTHON = process.env.MEMCONFORM_PYTHON || 'python3';
// The ops this driver forwards: the shared-store tools and the readers a cross-tool sequence uses.
const FORWARDED = ['write_memory', 'remove_memory', 'pin_memory', 'index_entries', 'topic_content', 'read_index'];
const MODES = ['frozen', 'offset'];
let clock = null; // {now: epoch ms, mode, tz, since: Date.now() when set_clock came}

// One op in one fresh reference process: set_clock (when the harness set one), the op, exit.
function runOp(op, args) {
  const lines = [];
  if (clock) {
    const now = clock.mode === 'offset' ? clock.now + (Date.now() - clock.since) : clock.now;
    lines.push({ id: 0, op: 'set_clock', args: { now: new Date(now).toISOString(), mode: 'frozen', tz: clock.tz } });
  }
  lines.push({ id: 1, op, args }, { id: 2, op: 'exit' });
  const child = spawnSync(PYTHON, ['-m', 'memconform.reference', 'serve'], {
    input: lines.map(l => JSON.stringify(l)).join('\n') + '\n', encoding: 'utf8', env: process.env,
  });
  if (child.error) throw child.error;
  const answers = child.stdout.split('\n').filter(Boolean).map(l => JSON.parse(l));
  const clockSet = answers.find(a => a.id === 0);
  if (clockSet && !clockSet.ok) throw new Error(`the reference refused set_clock: ${clockSet.error.message}`);
  const answer = answers.find(a => a.id === 1);
  if (!answer) throw new Error(`reference exited ${child.status} without answering: ${child.stderr.slice(-300)}`);
  if (child.stderr) process.stderr.write(child.stderr);
  return answer;
}

function hello() {
  const inner = runOp('hello', {});
  const info = inner.ok ? inner.result : { impl: 'memconform-reference', version: 'unknown' };
  return {
    impl: info.impl, version: info.version, pid: process.pid,
    ops: ['hello', 'set_clock', 'exit', ...FORWARDED.filter(op => (info.ops || []).includes(op))],
    clock_modes: MODES, profile: 'shared-store',
  };
}

function answer(id, op, args) {
  if (op === 'hello') return { id, ok: true, result: hello() };
  if (op === 'exit') return { id, ok: true, result: null };
  if (op === 'set_clock') {
    if (!MODES.includes(args.mode)) {
      return { id, ok: false, error: { kind: 'TypeError', message: `set_clock: mode must be one of ${MODES.join(', ')}` } };
    }
    const now = typeof args.now === 'number' ? args.now : Date.parse(args.now);
    clock = { now, mode: args.mode, tz: args.tz, since: Date.now() };
    return { id, ok: true, result: null };
  }
  if (!FORWARDED.includes(op)) return { id, ok: false, error: { kind: 'unsupported', message: `unsupported op ${JSON.stringify(op)}` } };
  const inner = runOp(op, args);
  return inner.ok ? { id, ok: true, result: inner.result } : { id, ok: false, error: inner.error };
}

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  let request;
  try {
    request = JSON.parse(line);
  } catch (e) {
    process.stdout.write(JSON.stringify({ id: null, ok: false, error: { kind: 'protocol', message: String(e) } }) + '\n');
    continue;
  }
  let reply;
  try {
    reply = answer(request.id, request.op, request.args || {});
  } catch (e) {
    reply = { id: request.id, ok: false, error: { kind: e && e.name ? e.name : 'Error', message: String(e && e.message) } };
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
  if (request.op === 'exit') process.exit(0);
}
