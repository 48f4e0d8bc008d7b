#!/usr/bin/env node
// A correct co-writer driver that declares only what the test asks for (issue 32): the harness
// must adapt to it, skip what it cannot run, or refuse in one line, and never send it a request
// it did not declare.  Derived from examples/reworded_driver.mjs: the reference's `serve` is
// behind it, every result in its own words, outcome kinds declared, profile shared-store.
//
//   CAP_OPS        comma list of ops beside hello and exit (default: the co-writer five,
//                  set_clock, advance_clock, reset); `all` keeps every op the reference offers
//   CAP_CLOCKS     the set_clock modes declared (default: frozen,offset)
//   CAP_RESET_ENV  1: declare reset_env (and take the environment on reset)
//   CAP_LOCAL      1: keep openpi's local store (local_store true); default: none (local_store
//                  false), the store behind it always shared and openpi's private files never
//                  touched (SS-LAYOUT-1)
//   CAP_TAG        a carry_tag to declare
//   CAP_LOG        a file: every request outside the declaration is appended to it, one line each
//                  (an op not declared, a set_clock mode not declared, a reset with env without
//                  reset_env); such a request is answered as a real narrow driver would
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const PYTHON = process.env.MEMCONFORM_PYTHON || 'python3';
const CLOCKS = (process.env.CAP_CLOCKS || 'frozen,offset').split(',');
const RESET_ENV = process.env.CAP_RESET_ENV === '1';
const LOCAL = process.env.CAP_LOCAL === '1';
const CO_WRITER = ['set_clock', 'advance_clock', 'write_memory', 'remove_memory', 'pin_memory', 'reset'];

function undeclared(what) {
  if (process.env.CAP_LOG) appendFileSync(process.env.CAP_LOG, `${what}\n`);
}

// no local store: the backing serve gets an agent dir of its own that always enables the shared
// store, with the sandbox's other settings copied in
function agentDir(sandboxAgentDir) {
  if (LOCAL) return sandboxAgentDir;
  const dir = mkdtempSync(join(tmpdir(), 'cap-agent-'));
  let rules = {};
  try { rules = JSON.parse(readFileSync(join(sandboxAgentDir, 'memory.jsonc'), 'utf8').replace(/^\s*\/\/.*$/gm, '')); } catch {}
  writeFileSync(join(dir, 'memory.jsonc'), JSON.stringify({ ...rules, shared_dir: true }));
  mkdirSync(join(dir, 'memory'), { recursive: true });
  return dir;
}

const BUSY = /^Error: memory store is busy \(another tool or process holds the lock\)/;
const KINDS = {
  write_memory: [
    [/^Created memory topic "(.*)" \((.*)\)\.$/s, 'ok', 'created', (m) => `cap: new note "${m[1]}" in ${m[2]}`],
    [/^Updated memory topic "(.*)" \((.*)\)\.$/s, 'ok', 'updated', (m) => `cap: note "${m[1]}" grown (${m[2]})`],
    [/^Invalid topic: (.*)$/s, 'refused', 'invalid-topic', (m) => `cap: bad topic: ${m[1]}`],
    [/^Reserved topic: (.*)$/s, 'refused', 'reserved-topic', (m) => `cap: reserved: ${m[1]}`],
  ],
  remove_memory: [
    [/^Removed "(.*)" from the index\./s, 'ok', 'removed', (m) => `cap: forgot "${m[1]}"`],
    [/^Cannot remove "(.*)" — it is pinned\./s, 'refused', 'pinned', (m) => `cap: "${m[1]}" is pinned`],
  ],
  pin_memory: [
    [/^Pinned "(.*)"\.\n/s, 'ok', 'pinned', (m) => `cap: pinned "${m[1]}"`],
    [/^Unpinned "(.*)"\.\n/s, 'ok', 'unpinned', (m) => `cap: unpinned "${m[1]}"`],
    [/^"(.*)" is already (pinned|unpinned)\.$/s, 'ok', 'unchanged', (m) => `cap: "${m[1]}" already ${m[2]}`],
  ],
  '*': [
    [BUSY, 'busy', null, () => 'cap: store busy, retry'],
    [/^No memory index found\.$/, 'not-found', null, () => 'cap: no notes'],
    [/^No entry found matching "(.*)"\.$/s, 'not-found', null, (m) => `cap: nothing matches "${m[1]}"`],
    [/^Multiple entries match "(.*)", be more specific: (.*)$/s, 'refused', 'ambiguous', (m) => `cap: "${m[1]}" is ambiguous`],
  ],
};
function outcomeOf(op, text) {
  for (const [pattern, kind, detail, words] of [...(KINDS[op] || []), ...KINDS['*']]) {
    const m = typeof text === 'string' ? text.match(pattern) : null;
    if (m) return { outcome: detail ? { kind, detail } : { kind }, text: words(m) };
  }
  if (op === 'repair_memory' && typeof text === 'string') return { outcome: { kind: 'ok', detail: 'repaired' }, text };
  return null;
}

const inner = spawn(PYTHON, ['-m', 'memconform.reference', 'serve'], {
  stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, PI_CODING_AGENT_DIR: agentDir(process.env.PI_CODING_AGENT_DIR) },
});
const waiting = [];
createInterface({ input: inner.stdout }).on('line', (line) => waiting.shift()?.(JSON.parse(line)));
inner.on('exit', (code) => {
  for (const resolve of waiting.splice(0)) resolve({ ok: false, error: { kind: 'Error', message: `backing process exited (${code})` } });
});
function forward(op, args) {
  return new Promise((resolve) => {
    waiting.push(resolve);
    inner.stdin.write(JSON.stringify({ id: 0, op, ...(args === undefined ? {} : { args }) }) + '\n');
  });
}

let OPS = null;
async function answer(id, op, args) {
  if (op !== 'hello' && OPS && !OPS.includes(op)) {
    undeclared(`op ${op}`);
    return { id, ok: false, error: { kind: 'unsupported', message: `cap does not offer ${op}` } };
  }
  if (op === 'set_clock' && args?.mode !== undefined && !CLOCKS.includes(args.mode)) {
    undeclared(`set_clock mode ${args.mode}`);
    return { id, ok: false, error: { kind: 'Error', message: `set_clock mode ${args.mode} not offered` } };
  }
  if (op === 'reset' && args?.env !== undefined) {
    if (!RESET_ENV) {
      undeclared('reset with env');
      args = undefined; // what a driver without reset_env does: a plain reset, the env ignored
    } else if (!LOCAL && args.env.PI_CODING_AGENT_DIR) {
      args = { ...args, env: { ...args.env, PI_CODING_AGENT_DIR: agentDir(args.env.PI_CODING_AGENT_DIR) } };
    }
  }
  const got = await forward(op, args);
  if (!got.ok) return { id, ok: false, error: got.error };
  if (op === 'hello') {
    const want = process.env.CAP_OPS;
    const ops = want === 'all' ? got.result.ops.filter((o) => o !== 'fresh_instance') : want !== undefined ? want.split(',').filter(Boolean) : CO_WRITER;
    OPS = [...new Set(['hello', 'exit', ...ops])];
    return {
      id, ok: true,
      result: {
        impl: 'capability-shim', version: '0.0.1', pid: inner.pid, ops: OPS, profile: 'shared-store', outcome_kinds: true,
        clock_modes: CLOCKS, local_store: LOCAL, ...(RESET_ENV ? { reset_env: true } : {}),
        ...(process.env.CAP_TAG ? { carry_tag: process.env.CAP_TAG } : {}),
      },
    };
  }
  if (!(op in KINDS)) return { id, ok: true, result: got.result };
  const mine = outcomeOf(op, got.result);
  return mine ? { id, ok: true, result: mine.text, outcome: mine.outcome } : { id, ok: true, result: got.result };
}

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  process.stdout.write(JSON.stringify(await answer(request.id, request.op, request.args)) + '\n');
  if (request.op === 'exit') break;
}
inner.stdin.end();
