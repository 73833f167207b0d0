// .env.example cannot drift from src/config.ts: it names exactly the variables
// loadConfig reads, each with a line of meaning above it, and its values are the defaults.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { loadConfig } from '../src/config.ts';

const EXAMPLE = readFileSync(new URL('../.env.example', import.meta.url), 'utf8');

/** `NAME=value` lines of the file, in order, with the comment line just above each. */
function exampleEntries(): { name: string; value: string; meaning: string | undefined }[] {
  const lines = EXAMPLE.split('\n');
  const entries = [];
  for (const [i, line] of lines.entries()) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (!match) continue;
    const above = lines[i - 1] ?? '';
    entries.push({ name: match[1]!, value: match[2]!, meaning: above.startsWith('# ') ? above.slice(2) : undefined });
  }
  return entries;
}

/** The names loadConfig looks up in `env` (every access, through a recording proxy). */
function variablesRead(env: Record<string, string>): Set<string> {
  const read = new Set<string>();
  const proxy = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return Reflect.get(target, name);
    },
    has(target, name) {
      if (typeof name === 'string') read.add(name);
      return Reflect.has(target, name);
    },
  });
  loadConfig(proxy);
  return read;
}

test('.env.example lists exactly the variables src/config.ts reads, each once with a line of meaning', () => {
  const entries = exampleEntries();
  const values = Object.fromEntries(entries.map((e) => [e.name, e.value]));
  // Read with nothing set and with the file's values, so a variable read only when another is set counts too.
  const read = new Set([...variablesRead({}), ...variablesRead(values)]);
  assert.deepEqual(entries.map((e) => e.name).sort(), [...read].sort());
  assert.equal(new Set(entries.map((e) => e.name)).size, entries.length, 'no variable twice');
  for (const entry of entries) {
    assert.ok(entry.meaning && entry.meaning.length > 10, `${entry.name} has a comment line above it`);
  }
  // Any non-comment, non-blank line that is not NAME=value would be a typo a shell would choke on.
  for (const line of EXAMPLE.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    assert.match(line, /^[A-Z][A-Z0-9_]*=\S*$/, line);
  }
});

test('the values in .env.example are the defaults: loading them gives the config of an empty environment', () => {
  const values = Object.fromEntries(exampleEntries().map((e) => [e.name, e.value]));
  assert.deepEqual(loadConfig(values), loadConfig({}));
});
