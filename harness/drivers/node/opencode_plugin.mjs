#!/usr/bin/env node
// memconform peer driver for openclaude-memory (the OpenCode plugin).
//
// Usage: node harness/drivers/node/opencode_plugin.mjs <path-to-ocl-memory.mjs>
//
// Speaks the JSON Lines peer protocol of docs/ARCHITECTURE.md §3 on stdin/stdout:
// one request object per line in, one answer object per line out. stdout is
// reserved for the protocol; diagnostics (ours and the plugin's) go to stderr.
//
// The plugin is driven the way OpenCode drives it: `hooks = await
// (await import(plugin)).default({})`, then `hooks.tool.<name>.execute(args)`
// followed by the host's `tool.execute.after` notification. Storage roots
// (XDG_CONFIG_HOME, OCL_SHARED_MEMORY_HOME, HOME) and TZ are inherited from the
// environment the harness starts us in; the plugin fixes its paths at import.
//
// The protocol loop, the stdout guard and the controllable clock (installed
// before the plugin is imported) come from protocol.mjs; this file holds the ops.
//
// Who the plugin is: hello reports what the plugin itself says (protocol.mjs
// identify()): the `name`/`version` of the nearest package.json walking up from the
// plugin whose name is `openclaude-memory` (any @scope, e.g. @openlines/), else the
// plugin's exported VERSION/version string; a name the plugin does not confirm is
// `openclaude-memory?`, a version it does not state is `unknown`. The driver carries no
// name or version of its own. hello also reports the plugin's path (`module`) and what
// the driver would use but the plugin lacks (`missing`; those ops are left out of `ops`).
//
// A plugin that does not import, has no default export function, whose default export
// throws, or whose hooks lack any REQUIRED tool cannot be driven: every op, hello first,
// answers kind "unavailable" naming the problem.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLOCK_MODES, Unsupported, firstLine, has, identify, load, resetClock, serve, setClock, targetPath } from './protocol.mjs';

const FAMILY = 'openclaude-memory';
const REQUIRED = ['write_memory', 'remove_memory', 'pin_memory'];
const SHARED_EXPORTS = ['readMemoryRules', 'parseRules', 'maybeCarryOverToSharedDir', 'getMemoryDir'];

// ---------------------------------------------------------------- plugin
const pluginPath = targetPath('node opencode_plugin.mjs <path-to-ocl-memory.mjs>');
const loaded = await load(pluginPath);
let pluginModule = loaded.module || {};
let hooks = {};
let unavailable = loaded.error || null;
if (!unavailable && typeof pluginModule.default !== 'function') {
  unavailable = `${pluginPath} is not an ${FAMILY} plugin: missing export default (the plugin function returning hooks)`;
}
if (!unavailable) {
  try {
    hooks = (await pluginModule.default({})) || {};
  } catch (err) {
    console.error(err && err.stack ? err.stack : String(err));
    unavailable = `${pluginPath}: the plugin function threw: ${firstLine(err)}`;
  }
}
const hasTool = name => Boolean(hooks.tool && hooks.tool[name] && typeof hooks.tool[name].execute === 'function');
const hasHook = name => typeof hooks[name] === 'function';
if (!unavailable) {
  const lacking = REQUIRED.filter(name => !hasTool(name));
  if (lacking.length) {
    unavailable = `${pluginPath} is not an ${FAMILY} plugin: its hooks lack ${lacking.map(n => `tool.${n}.execute`).join(', ')}`;
  }
}

// The plugin's own helper module, loaded from beside the plugin so that it is the very
// module instance the plugin uses (same URL, same process state; the plugin has imported
// it already, so loading it here runs nothing new).
const sharedPath = path.join(path.dirname(pluginPath), 'ocl-memory-shared.mjs');
const sharedLoaded = unavailable ? { module: {} } : await load(sharedPath);
let sharedModule = sharedLoaded.module || {};
const sharedLacks = sharedLoaded.error ? ['ocl-memory-shared.mjs (does not import)']
  : SHARED_EXPORTS.filter(name => typeof sharedModule[name] !== 'function')
    .map(name => `ocl-memory-shared.mjs ${name}()`);
async function shared() {
  if (sharedLacks.length) throw new Unsupported(`beside the plugin: no ${sharedLacks.join(', ')}`);
  return sharedModule;
}
const identity = identify(pluginPath, FAMILY, pluginModule);

// fresh_instance (issue 17): the plugin and its helper module loaded anew, as a fresh process
// loads them, so a crash explorer runs many stores through one warm driver. Node caches a
// module by URL, so each instance imports a private copy of the plugin folder: its module
// files hard-linked (copied across file systems) into a temporary mirror whose other entries,
// up to the plugin's grandparent (the plugin reads `../../skills`), are symlinks to the real
// ones. Relative imports then resolve inside the mirror, so `./ocl-memory-shared.mjs` is new
// too. (A resolve hook adding `?instance=N` did the same at 2-3x the cost per instance: every
// import round-trips to the loader thread.) Its own name, not `reset`, so a caller opts in
// (runner.py, faults/trace.py).
const MODULE_FILE = /\.(mjs|cjs|js)$/;
let instance = 0;
let mirrors = null;
let previousMirror = null;

function linkOrCopy(from, to) {
  try { fs.linkSync(from, to); } catch { fs.copyFileSync(from, to); }
}

function mirrorPlugin(n) {
  if (mirrors === null) {
    mirrors = fs.mkdtempSync(path.join(os.tmpdir(), 'memconform-ocl-'));
    process.on('exit', () => fs.rmSync(mirrors, { recursive: true, force: true }));
  }
  const pluginDir = path.dirname(pluginPath);
  const root = path.resolve(pluginDir, '..', '..');
  const steps = path.relative(root, pluginDir).split(path.sep).filter(Boolean);
  const top = path.join(mirrors, String(n));
  let real = root;
  let copy = top;
  fs.mkdirSync(copy);
  for (const step of [...steps, null]) {
    for (const entry of fs.readdirSync(real)) {
      if (entry === step) continue;
      const from = path.join(real, entry);
      const to = path.join(copy, entry);
      if (step === null && MODULE_FILE.test(entry) && fs.statSync(from).isFile()) linkOrCopy(from, to);
      else fs.symlinkSync(from, to);
    }
    if (step === null) break;
    real = path.join(real, step);
    copy = path.join(copy, step);
    fs.mkdirSync(copy);
  }
  return { dir: top, plugin: path.join(copy, path.basename(pluginPath)), shared: path.join(copy, path.basename(sharedPath)) };
}

async function freshInstance() {
  resetClock();
  instance += 1;
  const mirror = mirrorPlugin(instance);
  const again = await load(mirror.plugin);
  if (again.error) throw new Error(again.error);
  pluginModule = again.module;
  hooks = (await pluginModule.default({})) || {};
  const helper = await load(mirror.shared);
  if (helper.error) throw new Error(helper.error);
  sharedModule = helper.module;
  callCounter = 0;
  if (previousMirror) fs.rmSync(previousMirror, { recursive: true, force: true });
  previousMirror = mirror.dir;
  return null;
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

// What each op needs beyond the REQUIRED tools (a tool, a hook, the helper module), as
// the list of what is missing for it.
const lacksHook = name => (hasHook(name) ? [] : [name]);
const NEEDS = {
  repair_memory: () => (hasTool('repair_memory') ? [] : ['tool.repair_memory.execute']),
  parse_rules: () => sharedLacks,
  memory_dir: () => sharedLacks,
  system_transform: () => lacksHook('experimental.chat.system.transform'),
  compacting_context: () => lacksHook('experimental.session.compacting'),
};

function availableOps() {
  return Object.keys(OPS).filter(op => !has(NEEDS, op) || NEEDS[op]().length === 0);
}

// Everything the driver would use but the plugin lacks (the host's after-call hook too).
function missing() {
  const all = Object.values(NEEDS).flatMap(lacks => lacks()).concat(lacksHook('tool.execute.after'));
  return [...new Set(all)].sort();
}

const OPS = {
  // No `reset`: the plugin's helper module keeps process state that a re-import of the
  // plugin would not renew, so the harness starts a fresh driver for every scenario.
  hello: () => ({
    ...identity, module: pluginPath, missing: missing(), pid: process.pid, ops: availableOps(), clock_modes: CLOCK_MODES,
  }),
  set_clock: args => setClock(args),
  fresh_instance: () => freshInstance(),
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
    if (!hasHook('experimental.chat.system.transform')) throw new Unsupported('the plugin has no experimental.chat.system.transform hook');
    const output = { system: [] };
    await hooks['experimental.chat.system.transform']({}, output);
    return output.system;
  },
  compacting_context: async () => {
    if (!hasHook('experimental.session.compacting')) throw new Unsupported('the plugin has no experimental.session.compacting hook');
    const output = { context: [] };
    await hooks['experimental.session.compacting']({}, output);
    return output.context;
  },
  exit: () => null,
};

serve(OPS, {
  unavailable,
  unsupported: op => {
    const why = typeof op === 'string' && has(NOT_SUPPORTED, op) ? `: ${NOT_SUPPORTED[op]}` : '';
    return `unsupported op ${JSON.stringify(op)}${why}`;
  },
});
