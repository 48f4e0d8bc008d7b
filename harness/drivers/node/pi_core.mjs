#!/usr/bin/env node
// memconform peer driver for openpi-memory (memory-core.mjs).
//
// Usage: node harness/drivers/node/pi_core.mjs <path-to-memory-core.mjs>
//
// Speaks the JSON Lines peer protocol of docs/ARCHITECTURE.md §3 on stdin/stdout:
// one request object per line in, one answer object per line out. stdout is
// reserved for the protocol; diagnostics (ours and the core's) go to stderr.
//
// Storage roots (PI_CODING_AGENT_DIR, PI_SHARED_MEMORY_HOME, HOME) and TZ are
// inherited from the environment the harness starts us in: the core captures
// them once, when it is imported.
//
// The protocol loop, the stdout guard and the controllable clock (installed
// before the core is imported) come from protocol.mjs; this file holds the ops.
//
// Who the core is: hello reports what the core itself says (protocol.mjs identify()):
// the `name`/`version` of the nearest package.json walking up from the core whose name is
// `openpi-memory` (any @scope), else the core's exported VERSION/version string; a name
// the core does not confirm is `openpi-memory?`, a version it does not state is
// `unknown`. The driver carries no name or version of its own. hello also reports the
// core's path (`module`) and the exports the driver would use but the core lacks
// (`missing`; those ops are left out of `ops`).
//
// A core that does not import, or lacks any of REQUIRED (the three tools every agent
// calls), cannot be driven: every op, hello first, answers kind "unavailable" naming the
// import error or the missing exports.

import { CLOCK_MODES, Unsupported, applyEnv, has, identify, load, resetClock, serve, setClock, targetPath } from './protocol.mjs';

const FAMILY = 'openpi-memory';
const REQUIRED = ['executeWriteMemory', 'executeRemoveMemory', 'executePinMemory'];

// ---------------------------------------------------------------- helpers
// Positional arguments from named ones: trailing absent names are dropped so
// the callee's defaults apply; an absent name before a present one becomes
// undefined (which also selects the default).
function positional(args, names) {
  let last = -1;
  names.forEach((name, i) => { if (has(args, name)) last = i; });
  return names.slice(0, last + 1).map(name => args[name]);
}

// ---------------------------------------------------------------- core
const corePath = targetPath('node pi_core.mjs <path-to-memory-core.mjs>');
const loaded = await load(corePath);
let core = loaded.module || {};
let instance = 0;
const isFunction = name => typeof core[name] === 'function';
const lacking = REQUIRED.filter(name => !isFunction(name));
const unavailable = loaded.error || (lacking.length
  ? `${corePath} is not an ${FAMILY} core: missing exports ${lacking.map(n => `${n}()`).join(', ')}`
  : null);
const identity = implementationOf(core) || identify(corePath, FAMILY, core);

// A core that is another implementation behind openpi's API names itself: the reference's
// facade (reference-core.mjs) exports MEMCONFORM_IMPLEMENTATION, what its server's hello says.
function implementationOf(module) {
  const own = module.MEMCONFORM_IMPLEMENTATION;
  if (!own || typeof own.impl !== 'string' || typeof own.version !== 'string') return null;
  return { impl: own.impl, version: own.version, package: null, package_json: null,
    version_from: 'export MEMCONFORM_IMPLEMENTATION', facade: own.facade ?? null };
}

// reset: a fresh module instance (a query string makes ESM load the file again), so every
// piece of module state (carry-over flag, config-error memory, captured paths) starts anew,
// as in a fresh process; the clock goes back to real time.
async function reset(args = {}) {
  resetClock();
  applyEnv(args.env); // the core captures its paths at import: the fresh instance sees these
  instance += 1;
  const again = await load(corePath, `?instance=${instance}`);
  if (again.error) throw new Error(again.error);
  core = again.module;
  return null;
}

function fn(name) {
  const f = core[name];
  if (typeof f !== 'function') throw new Unsupported(`this core does not export ${name}()`);
  return f;
}

// op -> [core export it needs (or null), handler(args)]
const OPS = {
  hello: [null, () => ({
    ...identity, module: corePath, missing: missingExports(), pid: process.pid, ops: availableOps(), clock_modes: CLOCK_MODES, reset_env: true,
  })],
  reset: [null, args => reset(args)],
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
  return Object.keys(OPS).filter(op => OPS[op][0] === null || isFunction(OPS[op][0]));
}

function missingExports() {
  return [...new Set(Object.values(OPS).map(([needed]) => needed))]
    .filter(needed => needed !== null && !isFunction(needed)).sort();
}

serve(Object.fromEntries(Object.entries(OPS).map(([op, [, handler]]) => [op, handler])), { unavailable });
