// Imports the reference facade (argv[2]) after the storage env is set by the caller, calls a
// few exports of each kind and prints what they gave as one JSON object (test_facade.py
// compares it with the reference in-process).
import fs from 'node:fs';

const core = await import(new URL(`file://${process.argv[2]}`).href);
const out = { exports: Object.keys(core).sort() };
const capture = async (name, fn) => {
  try { out[name] = { value: await fn() }; } catch (e) { out[name] = { error: e.constructor.name, message: e.message, code: e.code }; }
};
out.MEMORY_RULES = core.MEMORY_RULES;
out.HANDOFF_FILE = core.HANDOFF_FILE;
out.MAX_BYTES = core.MAX_BYTES;
out.INITIAL_MEMORY = core.INITIAL_MEMORY;
await capture('toSlug', () => core.toSlug('Hello, World!'));
await capture('parseIndexLine', () => core.parseIndexLine('\t- [A](a b.md)x'));
await capture('notALine', () => core.parseIndexLine('* [A](a.md)'));
await capture('write', () => core.executeWriteMemory({ topic: 'Probe Topic', content: 'body', summary: 'first', pin: true }));
await capture('entries', () => core.readIndexEntries());
await capture('search', () => core.searchMemory('body'));
await capture('remove', () => core.executeRemoveMemory({ topic: 'Nothing Like This' }));
await capture('retire', () => core.retireRecapEntries());
await capture('badTopic', () => core.executeWriteMemory({ topic: 'x', content: 'y', summary: 'z', mode: 'bogus' }));
await capture('noArgs', () => core.executeWriteMemory());
const lines = ['# Memory Index', '- [Topic](t.md) [pin] 2025-01-01 -- summary'];
const same = core.upsertIndexLine(lines, 't.md', 'Topic', 'new', false);
out.upsertInPlace = same === lines;
out.upserted = lines;
await capture('maintain', () => core.maintainIndex(['- [Probe Topic](probe-topic.md) 2020-01-01 -- s', '- [Gone](gone.md) -- g'], { staleAfterDays: 180 }));
await capture('promise', () => core.executePinMemory({ topic: 'Probe Topic', pin: false }) instanceof Promise);
const { readSync, writeSync } = fs;
fs.readSync = fs.writeSync = () => { throw new Error('patched by the suite'); };
await capture('patchedFs', () => core.toSlug('Still Works'));
Object.assign(fs, { readSync, writeSync });
console.log(JSON.stringify(out));
