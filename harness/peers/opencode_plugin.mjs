#!/usr/bin/env node
// memconform peer driver for openclaude-memory (the OpenCode plugin).
//
// Usage: node harness/peers/opencode_plugin.mjs <path-to-ocl-memory.mjs>
//
// Speaks the JSON Lines peer protocol of DESIGN.md section 3 on stdin/stdout:
// one request object per line in, one answer object per line out. stdout is
// reserved for the protocol; diagnostics (ours and the plugin's) go to stderr.
//
// The plugin is driven the way OpenCode drives it: `hooks = await
// (await import(plugin)).default({})`, then `hooks.tool.<name>.execute(args)`
// followed by the host's `tool.execute.after` notification. Storage roots
// (XDG_CONFIG_HOME, OCL_SHARED_MEMORY_HOME, HOME) and TZ are inherited from the
// environment the harness starts us in; the plugin fixes its paths at import.
//
// Clock control: before the plugin is imported, the global Date is replaced by
// a subclass whose Date.now() and argument-less `new Date()` read a
// controllable clock. Until the first set_clock the clock is the real one.

import { pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import path from 'node:path';

const IMPL = 'openclaude-memory';
const VERSION = '0.6.6';

// ---------------------------------------------------------------- stdout guard
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

// ---------------------------------------------------------------- plugin
const pluginArg = process.argv[2];
if (!pluginArg) {
  console.error('usage: node opencode_plugin.mjs <path-to-ocl-memory.mjs>');
  process.exit(2);
}
const pluginPath = path.resolve(pluginArg);
const pluginModule = await import(pathToFileURL(pluginPath).href);
const hooks = await pluginModule.default({});

// The plugin's own helper module, loaded from beside the plugin so that it is
// the very module instance the plugin uses (same URL, same process state).
let sharedModule = null;
async function shared() {
  if (!sharedModule) {
    const sharedPath = path.join(path.dirname(pluginPath), 'ocl-memory-shared.mjs');
    sharedModule = await import(pathToFileURL(sharedPath).href);
  }
  return sharedModule;
}

let callCounter = 0;

async function runTool(name, args) {
  const tool = hooks.tool && hooks.tool[name];
  if (!tool || typeof tool.execute !== 'function') throw new Unsupported(`the plugin has no ${name} tool`);
  const result = await tool.execute({ ...args });
  // What the OpenCode host does after every tool call.
  const after = hooks['tool.execute.after'];
  if (typeof after === 'function') {
    callCounter += 1;
    await after({ tool: name, sessionID: 'memconform', callID: `memconform-${callCounter}` },
      { title: '', output: result, metadata: {} });
  }
  return result;
}

// The plugin's own configuration reading, in the order its cache refresh uses:
// read (creating the file if missing) -> parse -> carry-over -> directory.
async function pluginConfig() {
  const s = await shared();
  return s.parseRules(s.readMemoryRules());
}

const NOT_SUPPORTED = {
  retire_recaps: 'the plugin has no recap retirement',
  read_index: "the plugin's index reader is internal and always applies its configured line limit (see compacting_context)",
  index_entries: 'the plugin has no structured index reader',
  topic_content: 'the plugin has no topic reader',
  search: 'the plugin has no search',
  render_rules: 'the plugin renders rules only inside its injected system text (see system_transform)',
  write_handoff: 'the plugin has no HANDOFF.md',
  replace_latest_handoff: 'the plugin has no HANDOFF.md',
  read_handoff: 'the plugin has no HANDOFF.md',
  decide_compaction: 'the plugin has no compaction decision function',
};

const OPS = {
  // No `reset`: the plugin's helper module keeps process state that a re-import of the
  // plugin would not renew, so the harness starts a fresh driver for every scenario.
  hello: () => ({ impl: IMPL, version: VERSION, pid: process.pid, ops: Object.keys(OPS) }),
  set_clock: args => setClock(args),
  write_memory: args => runTool('write_memory', args),
  remove_memory: args => runTool('remove_memory', args),
  pin_memory: args => runTool('pin_memory', args),
  repair_memory: args => runTool('repair_memory', args),
  // Plugin-specific: its parsed configuration record (its own field set).
  parse_rules: () => pluginConfig(),
  memory_dir: async () => {
    const s = await shared();
    const config = await pluginConfig();
    await s.maybeCarryOverToSharedDir(config);
    return s.getMemoryDir(config);
  },
  // Session hooks, called as the OpenCode host calls them; result = what the
  // hook pushed into its output object.
  system_transform: async () => {
    const output = { system: [] };
    await hooks['experimental.chat.system.transform']({}, output);
    return output.system;
  },
  compacting_context: async () => {
    const output = { context: [] };
    await hooks['experimental.session.compacting']({}, output);
    return output.context;
  },
  exit: () => null,
};

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
  if (typeof op !== 'string' || !has(OPS, op)) {
    const why = typeof op === 'string' && has(NOT_SUPPORTED, op) ? `: ${NOT_SUPPORTED[op]}` : '';
    await send({ id, ok: false, error: { kind: 'unsupported', message: `unsupported op ${JSON.stringify(op)}${why}` } });
    return false;
  }
  try {
    const result = await OPS[op](args);
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
