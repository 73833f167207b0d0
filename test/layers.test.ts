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

/** A violation of the check's text report: its rule and its path (a cycle's every module, in order). */
interface Violation {
  rule: string;
  path: string[];
}

/**
 * The violations of `output`: each is `error <rule>: <from> → <to>`, a cycle's path going on
 * over indented lines (`<module> →`) to its first module again.
 */
function violationsOf(output: string): Violation[] {
  const violations: Violation[] = [];
  for (const line of output.split('\n')) {
    const head = /^\s+(?:error|warn|info) ([^:\s]+): (.*)$/.exec(line);
    if (head) violations.push({ rule: head[1]!, path: head[2]!.split('→').map((part) => part.trim()) });
    else if (violations.length > 0 && /^\s{4,}\S/.test(line)) {
      const path = violations.at(-1)!.path;
      path.pop(); // the empty text after the previous line's arrow
      path.push(...line.split('→').map((part) => part.trim()));
    }
  }
  return violations;
}

// The bad imports planted: a file, and the import appended to it.
const PLANTED: Record<string, string> = {
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
};

// One run of the check (each costs ≈ 2 s of CPU): the tree with the bad imports planted. Every
// violation it reports must be a planted import, or a cycle one of them closes: any other
// would be the tree's own, so the tree as it stands passes (as `npm run check` also shows).
test('every kind of bad import fails the check, each named with its rule and its path; the tree as it stands passes', () => {
  const dir = copyTree(PLANTED);
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

    const violations = violationsOf(output);
    const reported = /(\d+) dependency violations/.exec(output);
    assert.equal(violations.length, Number(reported?.[1]), `every violation read:\n${output}`);
    const planted = new Set([
      ...Object.entries(PLANTED).map(([file, line]) => `${file} → ${join(file, '..', /'(.*)'/.exec(line)![1]!)}`),
      'src/stray/helper.ts → src/shared/ids.ts',
    ]);
    for (const { rule, path } of violations) {
      const steps = path.slice(1).map((to, i) => `${path[i]} → ${to}`);
      assert.ok(
        steps.some((step) => planted.has(step)),
        `${rule}: ${path.join(' → ')} is none of the planted imports: the tree fails the check`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
