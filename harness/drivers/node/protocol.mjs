// The JSON Lines peer protocol of docs/ARCHITECTURE.md §3, shared by every node driver.
//
// A driver imports this module first (a static import, so it is evaluated before the
// driver's own body and before the implementation is imported), then calls
// serve(ops) with its table of operations. This module owns what is the same for all
// drivers: stdout reserved for the protocol, the controllable clock behind set_clock,
// error encoding, the request loop (one request per line in, one answer per line out,
// answered in order), loading the implementation without dying on it, and telling who
// the implementation is.
//
// Identity (what hello reports as impl/version) comes from the implementation, never
// from the driver: see identify() below. A driver whose module cannot be imported, or
// lacks the exports the driver needs, still starts and answers every op (hello too) with
// an error of kind "unavailable" naming the problem, which it also prints on stderr.
//
// Clock control (clock.mjs): Date, setTimeout/setInterval/setImmediate and performance.now
// are replaced by a controllable clock: frozen, offset, or virtual (timers advance the
// clock instead of waiting; every answer then carries the clock as clock_ms). Until the
// first set_clock (and after resetClock()) the clock is the real wall clock.

import { createInterface } from 'node:readline';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';
import { during, virtualNow } from './clock.mjs';

// ---------------------------------------------------------------- stdout guard
// Anything the implementation (or a library) prints with console.log must not corrupt
// the protocol stream.
for (const name of ['log', 'info', 'debug', 'warn']) {
  console[name] = (...parts) => console.error(...parts);
}

// ---------------------------------------------------------------- clock
// Date, timers and performance.now are replaced in clock.mjs (imported above, so before any
// implementation): set_clock, resetClock and the virtual time that answers report.
export { CLOCK_MODES, resetClock, setClock } from './clock.mjs';

// ---------------------------------------------------------------- environment
// reset {env}: the variables a fresh process would have been started with, over the first
// environment; a later reset without them puts every variable back as it was. Drivers that
// re-import their implementation on reset say "reset_env": true in hello.
const envBefore = new Map(); // variable -> its value before the first override (undefined: unset)

export function applyEnv(overrides = {}) {
  const wanted = overrides && typeof overrides === 'object' ? overrides : {};
  for (const key of new Set([...envBefore.keys(), ...Object.keys(wanted)])) {
    if (has(wanted, key)) {
      if (!envBefore.has(key)) envBefore.set(key, process.env[key]);
      process.env[key] = String(wanted[key]);
    } else {
      const old = envBefore.get(key);
      if (old === undefined) delete process.env[key];
      else process.env[key] = old;
      envBefore.delete(key);
    }
  }
}

// ---------------------------------------------------------------- helpers
export function has(obj, key) {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

// Thrown by an op the implementation cannot perform: answered with kind "unsupported".
export class Unsupported extends Error {}

// Thrown when the implementation cannot be driven at all (does not import, lacks the
// exports the driver needs): answered with kind "unavailable".
export class Unavailable extends Error {}

// ---------------------------------------------------------------- loading
// The first line of a JS error, with the implementation's own frame when the stack has
// one ("SyntaxError: Unexpected token '}'", "Error: boom (at file:///x.mjs:1:7)").
export function firstLine(err) {
  const head = String(err instanceof Error ? `${err.name}${err.code ? ` [${err.code}]` : ''}: ${err.message}` : err)
    .split('\n')[0];
  const frame = err instanceof Error && typeof err.stack === 'string'
    ? err.stack.split('\n').map(l => l.trim()).find(l => /^at .*file:\/\//.test(l))
    : undefined;
  const where = frame ? frame.replace(/^at (?:.*\()?/, '').replace(/\)$/, '') : '';
  return where ? `${head} (at ${where})` : head;
}

// Where a syntax error in `file` is: import() does not say, `node --check` does ("file:2").
function syntaxErrorAt(file) {
  const checked = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8', timeout: 10000 });
  const first = String(checked.stderr || '').split('\n')[0];
  return /:\d+$/.test(first) && first.startsWith(file) ? first : null;
}

// import() the implementation: {module} or, when the import throws, {error: one line}
// (the whole error goes to stderr, where the harness shows its tail).
export async function load(file, query = '') {
  try {
    return { module: await import(pathToFileURL(file).href + query) };
  } catch (err) {
    console.error(err && err.stack ? err.stack : String(err));
    let line = firstLine(err);
    if (err instanceof SyntaxError && !/ \(at [^()]*\)$/.test(line)) {
      const where = syntaxErrorAt(file);
      if (where) line += ` (at ${where})`;
    }
    return { error: `cannot import ${file}: ${line}` };
  }
}

// ---------------------------------------------------------------- identity
// Who the implementation is, from the implementation itself:
//   name    - the `name` of the nearest package.json, walking up from the module's
//             directory, whose name is the driver's package (`family`, with or without an
//             npm @scope: `@openlines/openclaude-memory` is `openclaude-memory`); other
//             package.json files on the way (a nameless type marker, an enclosing app)
//             are skipped. Without one: `${family}?`, i.e. "driven as that package, not
//             confirmed by it" (npm names cannot contain `?`, so it never equals a
//             confirmed name).
//   version - that package.json's `version`; else a string exported by the module as
//             `VERSION` or `version`; else "unknown". Never a number the driver carries.
export function identify(file, family, exported = {}) {
  let pkg = null;
  let pkgPath = null;
  for (let dir = path.dirname(path.resolve(file)); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'package.json');
    try {
      const data = JSON.parse(fs.readFileSync(candidate, 'utf8'));
      if (data && typeof data.name === 'string' && data.name.replace(/^@[^/]+\//, '') === family) {
        pkg = data;
        pkgPath = candidate;
        break;
      }
    } catch {
      // absent, unreadable or not JSON: not the implementation's package.json
    }
    if (path.dirname(dir) === dir) break;
  }
  const nonEmpty = v => (typeof v === 'string' && v.trim() ? v.trim() : null);
  let version = pkg ? nonEmpty(pkg.version) : null;
  let versionFrom = version ? 'package.json' : null;
  for (const name of ['VERSION', 'version']) {
    if (version) break;
    version = nonEmpty(exported[name]);
    if (version) versionFrom = `export ${name}`;
  }
  return {
    impl: pkg ? family : `${family}?`,
    version: version || 'unknown',
    package: pkg ? pkg.name : null,
    package_json: pkgPath,
    version_from: versionFrom,
  };
}

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
  const now = virtualNow();
  if (now !== undefined) obj = { ...obj, clock_ms: now };
  let line;
  try {
    line = JSON.stringify(obj);
  } catch (err) {
    line = JSON.stringify({ id: obj.id ?? null, ok: false, error: describeError(err) });
  }
  return new Promise(resolve => process.stdout.write(line + '\n', resolve));
}

// The implementation's file named on the command line, resolved; exits with the usage
// line when it is missing.
export function targetPath(usage) {
  const arg = process.argv[2];
  if (!arg) {
    console.error(`usage: ${usage}`);
    process.exit(2);
  }
  return path.resolve(arg);
}

// ---------------------------------------------------------------- loop
const defaultUnsupported = op => `unsupported op: ${JSON.stringify(op)}`;

// Answer requests with ops[op](args) until stdin closes or the `exit` op is answered.
// unsupported(op) words the error for an op not in the table. `unavailable`, when set, is
// why the implementation cannot be driven: it is printed on stderr and every op but
// `exit` (hello included) answers it as an error of kind "unavailable".
export function serve(ops, { unsupported = defaultUnsupported, unavailable = null } = {}) {
  if (unavailable) {
    console.error(`memconform driver: ${unavailable}`);
    const refuse = () => { throw new Unavailable(unavailable); };
    ops = Object.fromEntries(Object.keys(ops).map(op => [op, op === 'exit' ? ops[op] : refuse]));
  }
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
    if (typeof op !== 'string' || !has(ops, op)) {
      await send({ id, ok: false, error: { kind: 'unsupported', message: unsupported(op) } });
      return false;
    }
    try {
      const result = await during(() => ops[op](args));
      await send({ id, ok: true, result: result === undefined ? null : result });
    } catch (err) {
      const error = err instanceof Unsupported ? { kind: 'unsupported', message: err.message }
        : err instanceof Unavailable ? { kind: 'unavailable', message: err.message }
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
}
