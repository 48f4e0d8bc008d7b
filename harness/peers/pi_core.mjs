#!/usr/bin/env node
// memconform peer driver for openpi-memory (memory-core.mjs).
//
// Usage: node harness/peers/pi_core.mjs <path-to-memory-core.mjs>
//
// Speaks the JSON Lines peer protocol of DESIGN.md section 3 on stdin/stdout:
// one request object per line in, one answer object per line out. stdout is
// reserved for the protocol; diagnostics (ours and the core's) go to stderr.
//
// Storage roots (PI_CODING_AGENT_DIR, PI_SHARED_MEMORY_HOME, HOME) and TZ are
// inherited from the environment the harness starts us in: the core captures
// them once, when it is imported.
//
// Clock control: before the core is imported, the global Date is replaced by a
// subclass whose Date.now() and argument-less `new Date()` read a controllable
// clock. Until the first set_clock the clock is the real wall clock.

import { pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import path from 'node:path';

const IMPL = 'openpi-memory';
const VERSION = '0.3.9';

// ---------------------------------------------------------------- stdout guard
// Anything the core (or a library) prints with console.log must not corrupt
// the protocol stream.
for (const name of ['log', 'info', 'debug', 'warn']) {
  console[name] = (...parts) => console.error(...parts);
}

// ---------------------------------------------------------------- clock
const RealDate = globalThis.Date;
let clockState = null; // null: real time; {frozen: ms} or {base: ms, t0: perf}

function controlledNow() {
  if (clockState === null) return RealDate.now();
  if ('frozen' in clockState) return clockState.frozen;
  return clockState.base + Math.floor(performance.now() - clockState.t0);
}

class ControlledDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(controlledNow());
    else super(...args);
  }
  static now() {
    return controlledNow();
  }
}
globalThis.Date = ControlledDate;

function parseInstant(value) {
  if (typeof value === 'number' && Number.isFinite(value)) return Math.trunc(value);
  if (typeof value === 'string') {
    const ms = RealDate.parse(value);
    if (!Number.isNaN(ms)) return ms;
  }
  throw new TypeError(`set_clock: "now" must be an ISO-8601 instant or epoch milliseconds, got ${JSON.stringify(value)}`);
}

function setClock(args) {
  // TZ may change between scenarios: Node re-reads process.env.TZ on assignment.
  if (typeof args.tz === 'string') process.env.TZ = args.tz;
  const ms = parseInstant(args.now);
  if (args.mode === 'frozen') clockState = { frozen: ms };
  else if (args.mode === 'offset') clockState = { base: ms, t0: performance.now() };
  else throw new TypeError(`set_clock: "mode" must be "frozen" or "offset", got ${JSON.stringify(args.mode)}`);
  return null;
}

// ---------------------------------------------------------------- helpers
function has(obj, key) {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

// Positional arguments from named ones: trailing absent names are dropped so
// the callee's defaults apply; an absent name before a present one becomes
// undefined (which also selects the default).
function positional(args, names) {
  let last = -1;
  names.forEach((name, i) => { if (has(args, name)) last = i; });
  return names.slice(0, last + 1).map(name => args[name]);
}

class Unsupported extends Error {}

function describeError(err) {
  if (err === null || typeof err !== 'object') {
    return { kind: typeof err, message: String(err) };
  }
  const kind = (err.constructor && err.constructor.name) || err.name || 'Error';
  const out = { kind, message: err.message === undefined ? String(err) : String(err.message) };
  if (typeof err.code === 'string' || typeof err.code === 'number') out.code = String(err.code);
  if (Array.isArray(err.errors)) out.errors = err.errors.map(describeError);
  return out;
}

function send(obj) {
  let line;
  try {
    line = JSON.stringify(obj);
  } catch (err) {
    line = JSON.stringify({ id: obj.id ?? null, ok: false, error: describeError(err) });
  }
  return new Promise(resolve => process.stdout.write(line + '\n', resolve));
}

// ---------------------------------------------------------------- core
const corePath = process.argv[2];
if (!corePath) {
  console.error('usage: node pi_core.mjs <path-to-memory-core.mjs>');
  process.exit(2);
}
const coreUrl = pathToFileURL(path.resolve(corePath)).href;
let core = await import(coreUrl);
let instance = 0;

// reset: a fresh module instance (a query string makes ESM load the file again), so every
// piece of module state (carry-over flag, config-error memory, captured paths) starts anew,
// as in a fresh process; the clock goes back to real time.
async function reset() {
  clockState = null;
  instance += 1;
  core = await import(`${coreUrl}?instance=${instance}`);
  return null;
}

function fn(name) {
  const f = core[name];
  if (typeof f !== 'function') throw new Unsupported(`this core does not export ${name}()`);
  return f;
}

// op -> [core export it needs (or null), handler(args)]
const OPS = {
  hello: [null, () => ({ impl: IMPL, version: VERSION, pid: process.pid, ops: availableOps() })],
  reset: [null, () => reset()],
  set_clock: [null, args => setClock(args)],
  write_memory: ['executeWriteMemory', args => fn('executeWriteMemory')({ ...args })],
  remove_memory: ['executeRemoveMemory', args => fn('executeRemoveMemory')({ ...args })],
  pin_memory: ['executePinMemory', args => fn('executePinMemory')({ ...args })],
  retire_recaps: ['retireRecapEntries', async () => { await fn('retireRecapEntries')(); return null; }],
  read_index: ['readMemoryIndex', args => fn('readMemoryIndex')(...positional(args, ['maxLines']))],
  index_entries: ['readIndexEntries', () => fn('readIndexEntries')()],
  topic_content: ['readTopicContent', args => fn('readTopicContent')(...positional(args, ['filename']))],
  search: ['searchMemory', args => fn('searchMemory')(...positional(args, ['query']))],
  parse_rules: ['parseRules', () => fn('parseRules')()],
  render_rules: ['renderRulesToMarkdown', args =>
    fn('renderRulesToMarkdown')(has(args, 'rules') ? args.rules : fn('parseRules')())],
  write_handoff: ['writeHandoff', args =>
    fn('writeHandoff')(...positional(args, ['messages', 'reason', 'keep']))],
  replace_latest_handoff: ['replaceLatestHandoffWithCompactionSummary', args =>
    fn('replaceLatestHandoffWithCompactionSummary')(...positional(args, ['summary', 'reason', 'keep']))],
  read_handoff: ['readHandoff', () => fn('readHandoff')()],
  decide_compaction: ['decideCompactionAction', args => {
    const rules = has(args, 'rules') ? args.rules : fn('parseRules')();
    return fn('decideCompactionAction')(rules, ...positional(args, ['handoff']));
  }],
  memory_dir: ['getMemoryDir', () => fn('getMemoryDir')()],
  get_memory_index: ['getMemoryIndex', () => fn('getMemoryIndex')()],
  reset_carry_over: ['_resetCarryOver', () => { fn('_resetCarryOver')(); return null; }],
  detect_incomplete_task: ['detectIncompleteTask', args =>
    fn('detectIncompleteTask')(...positional(args, ['text']))],
  parse_index_line: ['parseIndexLine', args => fn('parseIndexLine')(...positional(args, ['line']))],
  to_slug: ['toSlug', args => fn('toSlug')(...positional(args, ['topic']))],
  build_consolidation_prompt: ['buildConsolidationPrompt', args =>
    fn('buildConsolidationPrompt')(...positional(args, ['rulesMarkdown']))],
  build_compaction_consolidation_prompt: ['buildCompactionConsolidationPrompt', args =>
    fn('buildCompactionConsolidationPrompt')(...positional(args, ['summary', 'rulesMarkdown']))],
  exit: [null, () => null],
};

function availableOps() {
  return Object.keys(OPS).filter(op => {
    const needed = OPS[op][0];
    return needed === null || typeof core[needed] === 'function';
  });
}

// ---------------------------------------------------------------- loop
async function handle(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    await send({ id: null, ok: false, error: describeError(err) });
    return false;
  }
  const id = req && typeof req === 'object' && has(req, 'id') ? req.id : null;
  const op = req && typeof req === 'object' ? req.op : undefined;
  const rawArgs = req && typeof req === 'object' ? req.args : undefined;
  const args = rawArgs && typeof rawArgs === 'object' && !Array.isArray(rawArgs) ? rawArgs : {};
  const entry = typeof op === 'string' && has(OPS, op) ? OPS[op] : null;
  if (!entry) {
    await send({ id, ok: false, error: { kind: 'unsupported', message: `unsupported op: ${JSON.stringify(op)}` } });
    return false;
  }
  try {
    const result = await entry[1](args);
    await send({ id, ok: true, result: result === undefined ? null : result });
  } catch (err) {
    const error = err instanceof Unsupported
      ? { kind: 'unsupported', message: err.message }
      : describeError(err);
    await send({ id, ok: false, error });
  }
  return op === 'exit';
}

const queue = [];
let busy = false;
let inputClosed = false;

async function pump() {
  if (busy) return;
  busy = true;
  while (queue.length) {
    const line = queue.shift();
    if (!line.trim()) continue;
    if (await handle(line)) process.exit(0);
  }
  busy = false;
  if (inputClosed) process.exit(0);
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
rl.on('line', line => { queue.push(line); pump(); });
rl.on('close', () => { inputClosed = true; pump(); });
