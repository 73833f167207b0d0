// The layer rule of `npm run check` (.dependency-cruiser.cjs) holds on the tree and fails on
// a bad import: run on a temporary copy of src/ with one import added that points up a
// layer, sideways to a later record module, or from a migration into live code.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const ROOT = new URL('..', import.meta.url).pathname;

/** A copy of what the layer check reads, with `extra` appended to the named files (each must exist). */
function copyTree(extra: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'billing-layers-'));
  cpSync(join(ROOT, 'src'), join(dir, 'src'), { recursive: true });
  cpSync(join(ROOT, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'));
  cpSync(join(ROOT, 'tsconfig.json'), join(dir, 'tsconfig.json'));
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  for (const [file, text] of Object.entries(extra)) {
    // Appending would create a missing file: a renamed one must fail here, not test a stray file.
    assert.ok(existsSync(join(dir, file)), `${file} exists`);
    appendFileSync(join(dir, file), `\n${text}\n`);
  }
  return dir;
}

/** Runs the layer check of `npm run check` in `dir`: its exit status and output. */
function checkLayers(dir: string): { status: number | null; output: string } {
  const result = spawnSync(
    process.execPath,
    [
      join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs'),
      'src',
      '--config',
      '.dependency-cruiser.cjs',
    ],
    { cwd: dir, encoding: 'utf8' },
  );
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

test('the tree as it stands passes the layer check', () => {
  const dir = copyTree({});
  try {
    const { status, output } = checkLayers(dir);
    assert.equal(status, 0, output);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every kind of bad import fails the check, each named with its rule and its path', () => {
  const dir = copyTree({
    // A record importing the billing core.
    'src/modules/invoices/invoices.status.ts': "import '../../billing/settle.ts';",
    // A record importing a record listed after it: invoices may read dunning, so the reverse
    // would close a folder circle.
    'src/modules/dunning/dunning.schedule.ts': "import '../invoices/invoices.status.ts';",
    // HTTP plumbing importing a module; the core importing an entry point.
    'src/http/lists.ts': "import '../modules/plans/plans.schemas.ts';",
    'src/billing/resolve-schedule.ts': "import '../routes/health.schemas.ts';",
    // A migration importing live code.
    'src/db/migrations/0001_foundation.ts': "import '../../modules/customers/customers.email.ts';",
  });
  try {
    // A folder no layer lists.
    mkdirSync(join(dir, 'src/stray'));
    writeFileSync(join(dir, 'src/stray/helper.ts'), "import '../shared/ids.ts';\nexport const x = 1;\n");
    const { status, output } = checkLayers(dir);
    assert.notEqual(status, 0);
    for (const expected of [
      /layer-modules\/invoices: src\/modules\/invoices\/invoices\.status\.ts → src\/billing\/settle\.ts/,
      /layer-modules\/dunning: src\/modules\/dunning\/dunning\.schedule\.ts → src\/modules\/invoices/,
      /layer-http: src\/http\/lists\.ts → src\/modules\/plans\/plans\.schemas\.ts/,
      /layer-billing: src\/billing\/resolve-schedule\.ts → src\/routes\/health\.schemas\.ts/,
      /migrations-stand-alone: src\/db\/migrations\/0001_foundation\.ts/,
      /every-folder-layered: src\/stray\/helper\.ts/,
    ]) {
      assert.match(output, expected);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
