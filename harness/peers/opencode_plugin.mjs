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
// The protocol loop, the stdout guard and the controllable clock (installed
// before the plugin is imported) come from protocol.mjs; this file holds the ops.

import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { Unsupported, has, serve, setClock, targetPath } from './protocol.mjs';

const IMPL = 'openclaude-memory';
const VERSION = '0.6.6';

// ---------------------------------------------------------------- plugin
const pluginPath = targetPath('node opencode_plugin.mjs <path-to-ocl-memory.mjs>');
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

serve(OPS, {
  unsupported: op => {
    const why = typeof op === 'string' && has(NOT_SUPPORTED, op) ? `: ${NOT_SUPPORTED[op]}` : '';
    return `unsupported op ${JSON.stringify(op)}${why}`;
  },
});
