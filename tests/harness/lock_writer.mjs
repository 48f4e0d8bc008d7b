// A small writer of the store for the lock-protocol oracle's tests (issue 29): write_memory
// appends a token to a topic file and indexes it, under SPEC's lock (S-LOCK-2..5), in the
// shared store of the sandbox.  MEMCONFORM_BREAK (comma-separated) skips one required step:
//   read-before-lock  the index and the topic are read before the lock is taken
//   no-lock           nothing is locked at all
//   no-excl           a reclaim creates the new lock with a plain (non-exclusive) create
//   no-probe          a reclaim deletes the lock without the kill(pid, 0) liveness probe
//   no-recheck        a reclaim deletes the lock without the lstat after the probe (S-LOCK-4)
//   no-token-check    the release unlinks the lock without reading its token (S-LOCK-5)
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const broken = new Set((process.env.MEMCONFORM_BREAK || '').split(',').filter(Boolean));
const dir = () => path.join(process.env.PI_SHARED_MEMORY_HOME, '.agents', 'memory');
const BUSY = 'Error: memory store is busy (another tool or process holds the lock) — please retry in a moment.';
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const readOr = (p, dflt) => (fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : dflt);

function alive(lock, age) {
  let pid;
  try { pid = Number.parseInt(fs.readFileSync(lock, 'utf8').trim().split('\t')[0], 10); } catch { pid = NaN; }
  if (!Number.isInteger(pid) || pid <= 0) return age <= 60000;
  if (broken.has('no-probe')) return false;
  try { process.kill(pid, 0); return true; } catch (err) { return err.code !== 'ESRCH'; }
}

function tryAcquire(lock) {
  const token = `${process.pid}\t${Date.now()}\t${Math.random().toString(36).slice(2)}`;
  try { fs.writeFileSync(lock, token, { flag: 'wx' }); return token; } catch (err) { if (err.code !== 'EEXIST') throw err; }
  try {
    const first = fs.lstatSync(lock);
    const age = Date.now() - first.mtimeMs;
    if (age > 10000 && !alive(lock, age)) {
      if (!broken.has('no-recheck')) {
        const again = fs.lstatSync(lock);
        if (again.ino !== first.ino || again.mtimeMs !== first.mtimeMs) return null;
      }
      try { fs.unlinkSync(lock); } catch {}
      try { fs.writeFileSync(lock, token, { flag: broken.has('no-excl') ? 'w' : 'wx' }); return token; } catch {}
    }
  } catch {}
  return null;
}

function release(lock, token) {
  try {
    if (broken.has('no-token-check') || fs.readFileSync(lock, 'utf8') === token) fs.unlinkSync(lock);
  } catch {}
}

function atomicWrite(p, text) {
  const tmp = `${p}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  fs.writeFileSync(tmp, text, { flag: 'wx' });
  fs.renameSync(tmp, p);
}

async function write({ topic, content, summary }) {
  const d = dir();
  fs.mkdirSync(d, { recursive: true });
  const slug = topic.toLowerCase().replace(/[^a-z0-9]+/g, '-') + '.md';
  const indexPath = path.join(d, 'MEMORY.md');
  const topicPath = path.join(d, slug);
  const early = broken.has('read-before-lock') ? [readOr(indexPath, '# Memory\n'), readOr(topicPath, '')] : null;
  const lock = path.join(d, '.lock');
  let token = broken.has('no-lock') ? 'none' : null;
  for (let i = 0; i < 25 && !token; i++) {
    token = tryAcquire(lock);
    if (!token) await new Promise((r) => setTimeout(r, 20));
  }
  if (!token) return BUSY;
  try {
    const [index, body] = early ?? [readOr(indexPath, '# Memory\n'), readOr(topicPath, '')];
    atomicWrite(topicPath, `${body}${content}\n`);
    const line = `- [${topic}](${slug}) — ${summary}`;
    if (!index.includes(`](${slug})`)) atomicWrite(indexPath, `${index.trimEnd()}\n${line}\n`);
  } finally {
    if (!broken.has('no-lock')) release(lock, token);
  }
  return `Saved ${topic}.`;
}

for await (const line of readline.createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { id, op, args = {} } = JSON.parse(line);
  if (op === 'hello') out({ id, ok: true, result: { impl: 'lock-writer', version: '0', pid: process.pid, ops: ['hello', 'write_memory', 'exit'] } });
  else if (op === 'write_memory') out({ id, ok: true, result: await write(args) });
  else if (op === 'exit') { out({ id, ok: true, result: null }); process.exit(0); }
  else out({ id, ok: false, error: { kind: 'unsupported', message: `unsupported op: ${op}` } });
}
