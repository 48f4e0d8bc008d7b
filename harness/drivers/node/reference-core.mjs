// memconform reference facade: openpi-memory 0.3.9's memory-core.mjs API, answered by the
// Python reference (`python -m memconform.reference serve`).
//
// Why: the peers' own JS test suites import an openpi `memory-core.mjs` by path; pointed at
// this module they run, unchanged, against the reference. This file holds NO store logic:
// every export is one protocol op (docs/ARCHITECTURE.md §3) of one long-lived `serve` process,
// started when this module instance is loaded, with the environment of that moment (the
// storage roots PI_CODING_AGENT_DIR, PI_SHARED_MEMORY_HOME, HOME and TZ are captured once, at
// import, as the JS core does: S-PATH-1, S-PATH-2). Constants and paths are the values the
// reference computes (op `constants`).
//
// Which python: MEMCONFORM_PYTHON (read at import), else `python3` on PATH; it must be able
// to import memconform. `memconform facade-path --python` prints the interpreter memconform
// itself runs under, `memconform facade-path` this file's path.
//
// Channel: the server's stdin and stdout are two FIFOs that this module opens itself, so
// every call is a blocking write + fs.readSync of one JSON line (0.02-0.08 ms median per
// call on our machine, against 0.13-0.14 ms for a worker + Atomics.wait and ~270 ms for a
// spawnSync per call; see docs/FACADE.md). Synchronous exports return the answer; the
// exports that are async in the JS core return a promise settled with it: like the JS core
// with a free lock, whose critical section runs before its first await yields. The server is
// sequential, so concurrent calls of one process are serialised (as its lock would) and the
// event loop does not run while the server works (timers cannot fire during a lock wait).
// When this process ends, the server reads end-of-file and exits.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';

// The channel's own fs calls, taken at import: a suite that later replaces fs members to
// inject faults into the JS process must not break the channel.
const { readSync, writeSync, closeSync } = fs;

const PYTHON = process.env.MEMCONFORM_PYTHON || 'python3';
const SERVE = ['-m', 'memconform.reference', 'serve'];
const HINT = 'set MEMCONFORM_PYTHON to a python that imports memconform (memconform facade-path --python prints one)';

// ---------------------------------------------------------------- channel
function openChannel() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memconform-facade-'));
  const requests = path.join(dir, 'requests');
  const answers = path.join(dir, 'answers');
  try {
    const made = spawnSync('mkfifo', [requests, answers]);
    if (made.status !== 0) throw new Error(`memconform facade: mkfifo failed: ${made.error?.message || made.stderr}`);
    const { O_RDONLY, O_WRONLY, O_NONBLOCK } = fs.constants;
    // A FIFO opens without blocking once its other end is open: a non-blocking reader first,
    // then the blocking ends, then the placeholder goes away.
    const probeIn = fs.openSync(requests, O_RDONLY | O_NONBLOCK);
    const toServer = fs.openSync(requests, O_WRONLY);
    const serverIn = fs.openSync(requests, O_RDONLY);
    fs.closeSync(probeIn);
    const probeOut = fs.openSync(answers, O_RDONLY | O_NONBLOCK);
    const serverOut = fs.openSync(answers, O_WRONLY);
    const fromServer = fs.openSync(answers, O_RDONLY);
    fs.closeSync(probeOut);
    const child = spawn(PYTHON, SERVE, { stdio: [serverIn, serverOut, 'inherit'], env: { ...process.env } });
    const state = { toServer, fromServer, child, failure: null };
    child.on('error', e => { state.failure = e; });
    child.unref();
    fs.closeSync(serverIn);
    fs.closeSync(serverOut);
    return state;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// One server per module instance, but not for ever: a caller that re-imports the module for
// every fresh store (as the pi driver's reset does) would otherwise leave one live server,
// with its inotify watch, per import. Process-wide, only the newest MAX_LIVE instances keep
// their server; an older instance used again opens a new one (its in-process state, such as
// the carry-over flag, starts afresh, as after a restart).
const MAX_LIVE = 8;
const LIVE = (globalThis[Symbol.for('memconform.facade.live')] ??= []);
let channel = null;
let pending = Buffer.alloc(0);
function retire() {
  if (channel === null) return;
  for (const fd of [channel.toServer, channel.fromServer]) {
    try { closeSync(fd); } catch { /* already closed */ }
  }
  channel = null;
  pending = Buffer.alloc(0);
}
function current() {
  if (channel === null) {
    channel = openChannel();
    LIVE.push(retire);
    while (LIVE.length > MAX_LIVE) LIVE.shift()();
  }
  return channel;
}
current();
let nextId = 0;
const chunk = Buffer.alloc(1 << 16);

function serverGone() {
  const why = channel && channel.failure ? `: ${channel.failure.message}` : '';
  return new Error(`memconform facade: the reference server (${PYTHON}) exited${why}; ${HINT}`);
}

function readLine() {
  for (;;) {
    const nl = pending.indexOf(10);
    if (nl >= 0) {
      const line = pending.subarray(0, nl).toString('utf8');
      pending = pending.subarray(nl + 1);
      return line;
    }
    const n = readSync(current().fromServer, chunk, 0, chunk.length, null);
    if (n === 0) throw serverGone();
    pending = Buffer.concat([pending, chunk.subarray(0, n)]);
  }
}

function writeAll(text) {
  const data = Buffer.from(text, 'utf8');
  let off = 0;
  try {
    while (off < data.length) off += writeSync(current().toServer, data, off, data.length - off);
  } catch (e) {
    if (e.code === 'EPIPE') throw serverGone();
    throw e;
  }
}

// An error answer as the JS core would have thrown it: the class named by `kind`, its
// message, and the errno `code` when there is one.
const CLASSES = { TypeError, RangeError, SyntaxError, ReferenceError, URIError, EvalError };
function toError(e) {
  let error;
  if (e.kind === 'AggregateError') error = new AggregateError((e.errors || []).map(toError), e.message);
  else if (CLASSES[e.kind]) error = new CLASSES[e.kind](e.message);
  else {
    error = new Error(e.message);
    if (e.kind && e.kind !== 'Error') error.name = e.kind;
  }
  if (e.code !== undefined) error.code = e.code;
  return error;
}

// One request and its answer, as the server gave it.
function request(op, args) {
  const id = nextId++;
  writeAll(`${JSON.stringify({ id, op, args })}\n`);
  const answer = JSON.parse(readLine());
  if (answer.id !== id) throw new Error(`memconform facade: answer ${answer.id} to request ${id}`);
  return answer;
}

// The clock of a memconform driver that loaded this module (clock.mjs publishes it; absent:
// real time on both sides). Before each call the server's clock is set to agree with it
// (frozen, offset or virtual, and the scenario's TZ) when it changed since; after a call
// under a virtual clock, the driver's clock moves on to where the server's went (its lock
// waits are virtual time). Without this a pinned scenario was judged on today's timestamps.
const CLOCK = globalThis[Symbol.for('memconform.clock')];
let sent = null; // what the server's clock was last set to: {generation, now}
function syncClock() {
  const c = CLOCK ? CLOCK.current() : null;
  if (c === null) return; // real time: the server's clock is real too (a reset re-imports us)
  if (sent !== null && sent.generation === c.generation && (c.mode !== 'virtual' || sent.now === c.now)) return;
  const answer = request('set_clock', { now: new Date(c.now).toISOString(), mode: c.mode, ...(c.tz === undefined ? {} : { tz: c.tz }) });
  if (!answer.ok) throw toError(answer.error);
  sent = { generation: c.generation, now: c.now };
}

// One op, synchronously: absent (undefined) arguments are left out, so the op's defaults
// apply as the JS defaults would.
function call(op, args = {}) {
  syncClock();
  const answer = request(op, args);
  if (typeof answer.clock_ms === 'number' && sent !== null) {
    CLOCK.jumpTo(answer.clock_ms);
    sent.now = answer.clock_ms;
  }
  if (!answer.ok) throw toError(answer.error);
  return answer.result;
}

const hello = call('hello');
const C = call('constants');
if (hello.impl !== 'memconform-reference') throw new Error(`memconform facade: ${PYTHON} serves ${hello.impl}, not the reference`);

// Who answers: the reference, as its server names itself. A driver that loads this module
// as an openpi core (pi_core.mjs) reports this name and version, not `openpi-memory?`: the
// gate through the facade judges the reference, with the reference's known deviations.
export const MEMCONFORM_IMPLEMENTATION = Object.freeze({ impl: hello.impl, version: hello.version, facade: 'openpi-memory 0.3.9 core API' });

// ---------------------------------------------------------------- constants and paths
export const MEMORY_RULES = C.MEMORY_RULES;
export const HANDOFF_FILE = C.HANDOFF_FILE;
export const MAX_LINES = C.MAX_LINES;
export const MAX_BYTES = C.MAX_BYTES;
export const DEFAULT_STALE_DAYS = C.DEFAULT_STALE_DAYS;
export const DEFAULT_INJECT_INTERVAL = C.DEFAULT_INJECT_INTERVAL;
export const DEFAULT_HANDOFF_KEEP = C.DEFAULT_HANDOFF_KEEP;
export const DEFAULT_AUTO_RESUME_AFTER_THRESHOLD = C.DEFAULT_AUTO_RESUME_AFTER_THRESHOLD;
export const DEFAULT_CONSOLIDATE_ON_COMPACT = C.DEFAULT_CONSOLIDATE_ON_COMPACT;
export const DEFAULT_SHARED_DIR = C.DEFAULT_SHARED_DIR;
export const INITIAL_MEMORY = C.INITIAL_MEMORY;
export const INITIAL_RULES_JSONC = C.INITIAL_RULES_JSONC;
export const MAX_SUMMARY_LENGTH = C.MAX_SUMMARY_LENGTH;
export const RESERVED_TOPIC_SLUG = C.RESERVED_TOPIC_SLUG;
export const MAX_HANDOFF_SUMMARY_BYTES = C.MAX_HANDOFF_SUMMARY_BYTES;

// ---------------------------------------------------------------- synchronous exports
export function buildConsolidationPrompt(rulesMarkdown) { return call('build_consolidation_prompt', { rulesMarkdown }); }
export function buildCompactionConsolidationPrompt(summary, rulesMarkdown) {
  return call('build_compaction_consolidation_prompt', { summary, rulesMarkdown });
}
export function _resetCarryOver() { call('reset_carry_over'); }
export function getMemoryDir() { return call('memory_dir'); }
export function getMemoryIndex() { return call('get_memory_index'); }
export function parseRules() { return call('parse_rules'); }
export function renderRulesToMarkdown(rules) { return call('render_rules', { rules }); }
export function detectIncompleteTask(handoffText) { return call('detect_incomplete_task', { text: handoffText }); }
export function decideCompactionAction(rules, handoff) { return call('decide_compaction', { rules, handoff }); }
export function readMemoryIndex(maxLines) { return call('read_index', { maxLines }); }
export function parseIndexLine(line) { return call('parse_index_line', { line }); }
export function toSlug(topic) { return call('to_slug', { topic }); }
// The JS core edits `lines` in place and returns it: the reference's lines are put back.
export function upsertIndexLine(lines, filename, name, summary, pin) {
  const result = call('upsert_index_line', { lines, filename, name, summary, pin });
  lines.splice(0, lines.length, ...result);
  return lines;
}
export function maintainIndex(lines, config, memoryDir) { return call('maintain_index', { lines, config, memoryDir }); }
export function searchMemory(query) { return call('search', { query }); }
export function writeHandoff(messages, reason, handoffKeep) { return call('write_handoff', { messages, reason, keep: handoffKeep }); }
export function replaceLatestHandoffWithCompactionSummary(summary, reason, handoffKeep) {
  return call('replace_latest_handoff', { summary, reason, keep: handoffKeep });
}
export function readHandoff() { return call('read_handoff'); }
export function readIndexEntries() { return call('index_entries'); }
export function readTopicContent(filename) { return call('topic_content', { filename }); }

// ---------------------------------------------------------------- asynchronous exports
export async function retireRecapEntries() { call('retire_recaps'); }
export async function executeWriteMemory({ topic, content, summary, pin, mode, overwrite }) {
  return call('write_memory', { topic, content, summary, pin, mode, overwrite });
}
export async function executeRemoveMemory({ topic }) { return call('remove_memory', { topic }); }
export async function executePinMemory({ topic, pin }) { return call('pin_memory', { topic, pin }); }
