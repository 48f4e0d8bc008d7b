#!/usr/bin/env node
// A third implementation's driver that words every result its own way and declares outcome
// kinds (issue 22, docs/IMPLEMENTING.md "Outcome kinds"): the shared-store gate judges what each
// op did by the `outcome` it answers, never by its sentence.
//
// Usage:  memconform conformance --impl node:$(memconform example-driver) \
//             --deviations $(dirname $(memconform example-driver))/KNOWN_DEVIATIONS.example.md
//
// Behind it is the reference (`python -m memconform.reference serve`, one long-lived process;
// MEMCONFORM_PYTHON names the interpreter, default python3), not a store of its own: the point
// of this example is the driver layer a tool author writes — naming itself, declaring its
// profile and outcome kinds, rewording results — and an implementation that passes the gate
// already is what shows that layer is enough.  A second store written for the example would
// be a second reference to keep right, and would show nothing more about the protocol.
//
// Your tool knows what each op did from its own code (a status, an enum); the reference's API
// answers with SPEC's sentences, so here `KINDS` reads those.  Replace `outcomeOf` with your
// tool's own results, and `REWORD` with your tool's own texts.

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const PYTHON = process.env.MEMCONFORM_PYTHON || 'python3';
const NAME = 'memconform-example-reworded';
const VERSION = '0.1.0';

// What the backing implementation answered → [kind, detail, our own words]. The first match wins.
const BUSY = /^Error: memory store is busy \(another tool or process holds the lock\)/;
const KINDS = {
  write_memory: [
    [/^Created memory topic "(.*)" \((.*)\)\.$/s, 'ok', 'created', (m) => `Saved new note "${m[1]}" as ${m[2]}.`],
    [/^Updated memory topic "(.*)" \((.*)\)\.$/s, 'ok', 'updated', (m) => `Added to note "${m[1]}" (${m[2]}).`],
    [/^Invalid topic: (.*)$/s, 'refused', 'invalid-topic', (m) => `Not saved, that topic cannot be used: ${m[1]}`],
    [/^Reserved topic: (.*)$/s, 'refused', 'reserved-topic', (m) => `Not saved, that topic name is taken: ${m[1]}`],
  ],
  remove_memory: [
    [/^Removed "(.*)" from the index\./s, 'ok', 'removed', (m) => `Forgot note "${m[1]}" (its file stays).`],
    [/^Cannot remove "(.*)" — it is pinned\./s, 'refused', 'pinned', (m) => `"${m[1]}" is pinned; unpin it to forget it.`],
  ],
  pin_memory: [
    [/^Pinned "(.*)"\.\n/s, 'ok', 'pinned', (m) => `Note "${m[1]}" is now pinned.`],
    [/^Unpinned "(.*)"\.\n/s, 'ok', 'unpinned', (m) => `Note "${m[1]}" is no longer pinned.`],
    [/^"(.*)" is already (pinned|unpinned)\.$/s, 'ok', 'unchanged', (m) => `Note "${m[1]}" was already ${m[2]}.`],
  ],
  '*': [
    [BUSY, 'busy', null, () => 'Notes are in use by another tool; try again in a moment.'],
    [/^No memory index found\.$/, 'not-found', null, () => 'There are no notes yet.'],
    [/^No entry found matching "(.*)"\.$/s, 'not-found', null, (m) => `No note matches "${m[1]}".`],
    [/^Multiple entries match "(.*)", be more specific: (.*)$/s, 'refused', 'ambiguous',
      (m) => `Several notes match "${m[1]}" (${m[2]}); name one exactly.`],
  ],
};

// The outcome and our text for one answer of the backing implementation, or null if we cannot tell.
function outcomeOf(op, text) {
  for (const [pattern, kind, detail, words] of [...(KINDS[op] || []), ...KINDS['*']]) {
    const m = typeof text === 'string' ? text.match(pattern) : null;
    if (m) return { outcome: detail ? { kind, detail } : { kind }, text: words(m) };
  }
  return null;
}

// --- the backing implementation: one `serve` process, requests answered in order -------------
const inner = spawn(PYTHON, ['-m', 'memconform.reference', 'serve'], { stdio: ['pipe', 'pipe', 'inherit'] });
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

// --- the protocol, as the harness speaks it ---------------------------------------------------
async function answer(id, op, args) {
  const got = await forward(op, args);
  const base = { id, ok: got.ok, ...(got.clock_ms === undefined ? {} : { clock_ms: got.clock_ms }) };
  if (!got.ok) return { ...base, error: got.error };
  if (op === 'hello') {
    return {
      ...base,
      result: {
        ...got.result, impl: NAME, version: VERSION, pid: inner.pid, module: new URL(import.meta.url).pathname,
        profile: 'shared-store', outcome_kinds: true,
      },
    };
  }
  if (!(op in KINDS)) return { ...base, result: got.result };
  const mine = outcomeOf(op, got.result);
  // a result we cannot tell goes back without an outcome: the harness says so (a protocol violation)
  return mine ? { ...base, result: mine.text, outcome: mine.outcome } : { ...base, result: got.result };
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
  process.stdout.write(JSON.stringify(await answer(request.id, request.op, request.args)) + '\n');
  if (request.op === 'exit') break;
}
inner.stdin.end();
