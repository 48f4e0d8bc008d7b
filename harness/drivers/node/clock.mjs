// The controllable clock behind set_clock, shared by every node driver (docs/ARCHITECTURE.md §3).
//
// Imported by protocol.mjs before the implementation, so the implementation sees only the
// shimmed globals. Modes:
//   real    - until the first set_clock and after resetClock(): the host's clocks and timers.
//   frozen  - Date.now() and `new Date()` return one instant; timers are real.
//   offset  - Date runs from the given instant at real speed; timers are real.
//   virtual - Date.now(), `new Date()` and performance.now() move only when a timer fires:
//             setTimeout/setInterval (global, node:timers, node:timers/promises) never wait;
//             when an op is in flight and the implementation is idle except for those timers
//             (no pending setImmediate, no fs or process request in flight), the clock jumps to
//             the earliest one and runs it. A 500 ms lock window thus costs no wall time and
//             its length is exact (answers carry the clock as clock_ms).
//
// File times must agree with that clock: lock ages are now - mtime. Locks the harness plants
// are stamped by the harness in the same virtual time (it reads clock_ms from every answer).
// For locks the implementation itself creates (an exclusive create of a file named .lock:
// writeFileSync(…, {flag: 'wx'}) or openSync(…, 'wx') … closeSync), this module sets the
// mtime to the virtual now once the lock is written (at closeSync for an fd, since writing
// the token would move the mtime again). We stamp the file rather than shim fs.stat's
// mtime so that every reader - another process, the harness, a second driver - sees the
// same age; a shimmed stat would only fool this process.
//
// What is not shimmed: process.hrtime, Atomics.wait and busy-wait loops (none of the cores
// waits with them; a busy-wait on Date.now() under a virtual clock never ends and is what the
// harness's hang watch reports as a livelock).

import fs from 'node:fs';
import path from 'node:path';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { performance } from 'node:perf_hooks';

const require = createRequire(import.meta.url);
const timersModule = require('node:timers');
const timersPromises = require('node:timers/promises');

export const CLOCK_MODES = ['frozen', 'offset', 'virtual'];

const RealDate = globalThis.Date;
const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
  setImmediate: globalThis.setImmediate,
  clearImmediate: globalThis.clearImmediate,
  perfNow: performance.now.bind(performance),
  writeFileSync: fs.writeFileSync,
  openSync: fs.openSync,
  closeSync: fs.closeSync,
  promisesSetTimeout: timersPromises.setTimeout,
};

// null: real time; {frozen: ms}; {base: ms, t0: perf}; {virtual: ms, perf0: perf, v0: ms}
let clockState = null;
let generation = 0; // one more at every set_clock and reset: what another process last got is stale
let clockTz; // the tz the last set_clock gave, if any
let perfShift = 0; // virtual time already spent, so performance.now() never runs backwards

const isVirtual = () => clockState !== null && 'virtual' in clockState;

export function controlledNow() {
  if (clockState === null) return RealDate.now();
  if ('frozen' in clockState) return clockState.frozen;
  if ('virtual' in clockState) return clockState.virtual;
  return clockState.base + Math.floor(real.perfNow() - clockState.t0);
}

// The virtual now when the clock is virtual (what answers report), else undefined.
export function virtualNow() {
  return isVirtual() ? clockState.virtual : undefined;
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

performance.now = function now() {
  if (isVirtual()) return clockState.perf0 + (clockState.virtual - clockState.v0);
  return real.perfNow() + perfShift;
};

// ---------------------------------------------------------------- virtual timers
const timers = new Map(); // id -> {due, seq, fn, args, every}
let nextTimerId = 1;
let seq = 0;
let inFlight = 0; // ops being answered: time moves only while one waits
let pendingImmediates = 0;
let advancing = false;

class VirtualTimeout {
  constructor(id, delay) {
    this._id = id;
    this._delay = delay;
    this._ref = true;
  }
  ref() { this._ref = true; return this; }
  unref() { this._ref = false; return this; }
  hasRef() { return this._ref; }
  refresh() {
    const t = timers.get(this._id);
    if (t) { t.due = clockState.virtual + this._delay; t.seq = seq++; }
    return this;
  }
  close() { timers.delete(this._id); return this; }
  [Symbol.toPrimitive]() { return this._id; }
}

function addTimer(fn, delay, args, every) {
  // Node runs a delay below 1 (or not a number) as 1 ms.
  const ms = Number(delay);
  const d = Number.isFinite(ms) && ms >= 1 ? Math.min(ms, 2147483647) : 1;
  const id = nextTimerId++;
  timers.set(id, { due: clockState.virtual + d, seq: seq++, fn, args, every: every ? d : 0 });
  scheduleAdvance();
  return new VirtualTimeout(id, d);
}

function clearVirtual(handle) {
  if (handle instanceof VirtualTimeout) { timers.delete(handle._id); return true; }
  if (typeof handle === 'number' && timers.has(handle)) { timers.delete(handle); return true; }
  return false;
}

// Something other than timers is still to come: an fs request, a child process, a socket.
function ioBusy() {
  return process.getActiveResourcesInfo().some(r => r !== 'CloseReq' && /Req|ProcessWrap|ConnectWrap/.test(r));
}

function scheduleAdvance() {
  if (advancing || inFlight === 0 || !isVirtual()) return;
  advancing = true;
  real.setImmediate(advance);
}

// Jump to the earliest virtual timer and run it, once the implementation is idle otherwise.
function advance() {
  advancing = false;
  if (inFlight === 0 || !isVirtual() || timers.size === 0) return;
  if (pendingImmediates > 0) { scheduleAdvance(); return; }
  if (ioBusy()) { advancing = true; real.setTimeout(advance, 1); return; }
  let id = null;
  let first = null;
  for (const [k, t] of timers) {
    if (first === null || t.due < first.due || (t.due === first.due && t.seq < first.seq)) { id = k; first = t; }
  }
  if (first.due > clockState.virtual) clockState.virtual = first.due;
  if (first.every) { first.due = clockState.virtual + first.every; first.seq = seq++; }
  else timers.delete(id);
  scheduleAdvance();
  first.fn(...first.args);
}

function shimSetTimeout(fn, delay, ...args) {
  if (!isVirtual() || typeof fn !== 'function') return real.setTimeout(fn, delay, ...args);
  return addTimer(fn, delay, args, false);
}
function shimSetInterval(fn, delay, ...args) {
  if (!isVirtual() || typeof fn !== 'function') return real.setInterval(fn, delay, ...args);
  return addTimer(fn, delay, args, true);
}
function shimClearTimeout(handle) {
  if (!clearVirtual(handle)) real.clearTimeout(handle);
}
function shimClearInterval(handle) {
  if (!clearVirtual(handle)) real.clearInterval(handle);
}
// setImmediate does not wait, but the clock must not jump while one is pending.
function shimSetImmediate(fn, ...args) {
  if (typeof fn !== 'function') return real.setImmediate(fn, ...args);
  pendingImmediates += 1;
  const handle = real.setImmediate(() => {
    pendingImmediates -= 1;
    fn(...args);
  });
  handle._memconformCounted = true;
  return handle;
}
function shimClearImmediate(handle) {
  if (handle && handle._memconformCounted && !handle._memconformCleared) {
    handle._memconformCleared = true;
    pendingImmediates -= 1;
  }
  real.clearImmediate(handle);
}
function shimPromisesSetTimeout(delay, value, options) {
  if (!isVirtual()) return real.promisesSetTimeout(delay, value, options);
  return new Promise(resolve => addTimer(resolve, delay, [value], false));
}

for (const target of [globalThis, timersModule]) {
  target.setTimeout = shimSetTimeout;
  target.setInterval = shimSetInterval;
  target.clearTimeout = shimClearTimeout;
  target.clearInterval = shimClearInterval;
  target.setImmediate = shimSetImmediate;
  target.clearImmediate = shimClearImmediate;
}
timersPromises.setTimeout = shimPromisesSetTimeout;

// ---------------------------------------------------------------- lock mtimes
const lockFds = new Map(); // fd -> path of a .lock this process created exclusively

function isLockPath(p) {
  return typeof p === 'string' && path.basename(p) === '.lock';
}
function exclusive(flags) {
  if (typeof flags === 'string') return flags.includes('x');
  if (typeof flags === 'number') return (flags & fs.constants.O_EXCL) !== 0;
  return false;
}
// utimes takes seconds as a double, which cannot hold every millisecond exactly: the stamp
// is 0.1 ms after the virtual now, so ages (integer now - mtime) compare with integer
// thresholds (age > 10000, age <= 60000) exactly as an exact mtime would.
function stamp(p) {
  const s = (clockState.virtual + 0.1) / 1000;
  try { fs.lutimesSync(p, s, s); } catch { /* gone already */ }
}

fs.writeFileSync = function writeFileSync(file, data, options) {
  const result = real.writeFileSync.apply(this, arguments);
  if (isVirtual() && isLockPath(file)) {
    const flag = options && typeof options === 'object' ? options.flag : undefined;
    if (exclusive(flag)) stamp(file);
  }
  return result;
};
fs.openSync = function openSync(p, flags) {
  const fd = real.openSync.apply(this, arguments);
  if (isVirtual() && isLockPath(p) && exclusive(flags)) lockFds.set(fd, p);
  else lockFds.delete(fd);
  return fd;
};
fs.closeSync = function closeSync(fd) {
  const p = lockFds.get(fd);
  lockFds.delete(fd);
  const result = real.closeSync.apply(this, arguments);
  if (p !== undefined && isVirtual()) stamp(p);
  return result;
};
syncBuiltinESMExports(); // named imports (`import { setTimeout } from 'node:timers'`) too

// ---------------------------------------------------------------- set_clock
function parseInstant(value) {
  if (typeof value === 'number' && Number.isFinite(value)) return Math.trunc(value);
  if (typeof value === 'string') {
    const ms = RealDate.parse(value);
    if (!Number.isNaN(ms)) return ms;
  }
  throw new TypeError(`set_clock: "now" must be an ISO-8601 instant or epoch milliseconds, got ${JSON.stringify(value)}`);
}

function leaveVirtual() {
  if (isVirtual()) perfShift += clockState.virtual - clockState.v0;
}

// The set_clock op: {now, mode: "frozen" | "offset" | "virtual", tz?}.
export function setClock(args) {
  // TZ may change between scenarios: Node re-reads process.env.TZ on assignment.
  if (typeof args.tz === 'string') process.env.TZ = args.tz;
  const ms = parseInstant(args.now);
  if (!CLOCK_MODES.includes(args.mode)) {
    throw new TypeError(`set_clock: "mode" must be one of ${CLOCK_MODES.join(', ')}, got ${JSON.stringify(args.mode)}`);
  }
  const perf = performance.now();
  leaveVirtual();
  generation += 1;
  clockTz = typeof args.tz === 'string' ? args.tz : undefined;
  if (args.mode === 'frozen') clockState = { frozen: ms };
  else if (args.mode === 'offset') clockState = { base: ms, t0: real.perfNow() };
  else clockState = { virtual: ms, v0: ms, perf0: perf };
  return null;
}

// Back to the real wall clock (what a fresh process sees); virtual timers are dropped.
export function resetClock() {
  leaveVirtual();
  generation += 1;
  clockTz = undefined;
  clockState = null;
  timers.clear();
  lockFds.clear();
}

// Run one op: while it is in flight, virtual time may move.
export async function during(run) {
  inFlight += 1;
  scheduleAdvance();
  try {
    return await run();
  } finally {
    inFlight -= 1;
  }
}

// ---------------------------------------------------------------- the clock for another process
// An implementation that answers from another process (the reference facade,
// reference-core.mjs, whose store lives in a python server) cannot see these shims: it reads
// the clock here and sets its server's to agree before each call, and moves this clock on to
// the time its server's virtual clock reached (a lock wait there is virtual time here too).
// Published on a global symbol, so the facade needs no path to this module and, loaded
// without a driver, finds none (real time on both sides).
function clockForServer() {
  if (clockState === null) return null;
  const mode = 'frozen' in clockState ? 'frozen' : 'virtual' in clockState ? 'virtual' : 'offset';
  return { mode, now: controlledNow(), tz: clockTz, generation };
}

function jumpTo(ms) {
  if (isVirtual() && Number.isFinite(ms) && ms > clockState.virtual) clockState.virtual = Math.trunc(ms);
}

globalThis[Symbol.for('memconform.clock')] = { current: clockForServer, jumpTo };
