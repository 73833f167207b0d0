// Console sign-in links and sessions (SPEC §16) on the database the tests run on: single use
// under concurrency (PostgreSQL: two connections race for one link), expiry, idle expiry,
// revocation, and only hashes stored.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, connectSecondInstance } from '../../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import {
  createLoginLink,
  findLiveSession,
  LOGIN_LINK_TTL_MS,
  redeemLoginLink,
  revokeAllSessions,
  revokeSession,
} from './console-sessions.service.ts';

const IDLE_MS = 30 * 60_000;

test('a link starts one session; the tables hold hashes, never the tokens', async (t) => {
  const app = await buildTestApp(t);
  const { db } = app.deps;
  const link = await createLoginLink(db, app.clock, { readOnly: false });
  assert.match(link.token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(link.expires_at, new Date(app.clock.now().getTime() + LOGIN_LINK_TTL_MS).toISOString());
  const redeemed = await redeemLoginLink(db, app.clock, link.token);
  assert.ok(redeemed);
  assert.equal(redeemed.session.readOnly, false);
  assert.equal(await redeemLoginLink(db, app.clock, link.token), undefined, 'used once');
  const stored = JSON.stringify([
    await db.selectFrom('console_login_links').selectAll().execute(),
    await db.selectFrom('console_sessions').selectAll().execute(),
  ]);
  assert.ok(!stored.includes(link.token) && !stored.includes(redeemed.token), 'no token is stored as given');
  const found = await findLiveSession(db, app.clock, redeemed.token, IDLE_MS);
  assert.equal(found?.id, redeemed.session.id);
});

test('a link is refused from its 15th minute on; odd tokens are refused without a query error', async (t) => {
  const app = await buildTestApp(t);
  const { db } = app.deps;
  const link = await createLoginLink(db, app.clock, { readOnly: true });
  app.clock.advance(LOGIN_LINK_TTL_MS);
  assert.equal(await redeemLoginLink(db, app.clock, link.token), undefined);
  for (const odd of ['', 'x', '\u0000'.repeat(43), 'é'.repeat(43), link.token + 'A', "' or 1=1 --".padEnd(43, 'a')]) {
    assert.equal(await redeemLoginLink(db, app.clock, odd), undefined);
    assert.equal(await findLiveSession(db, app.clock, odd, IDLE_MS), undefined);
  }
});

test('a read-only link starts a read-only session', async (t) => {
  const app = await buildTestApp(t);
  const link = await createLoginLink(app.deps.db, app.clock, { readOnly: true });
  const redeemed = await redeemLoginLink(app.deps.db, app.clock, link.token);
  assert.equal(redeemed?.session.readOnly, true);
});

test('idle expiry: a request keeps the session alive; CONSOLE_IDLE_TIMEOUT without one ends it', async (t) => {
  const app = await buildTestApp(t);
  const { db } = app.deps;
  const link = await createLoginLink(db, app.clock, { readOnly: false });
  const { token } = (await redeemLoginLink(db, app.clock, link.token))!;
  app.clock.advance(IDLE_MS - 1000);
  assert.ok(await findLiveSession(db, app.clock, token, IDLE_MS), 'just before the timeout');
  app.clock.advance(IDLE_MS - 1000);
  assert.ok(await findLiveSession(db, app.clock, token, IDLE_MS), 'the last request restarted the wait');
  app.clock.advance(IDLE_MS);
  assert.equal(await findLiveSession(db, app.clock, token, IDLE_MS), undefined);
});

test('sign out ends one session; console-logout --all ends every one and voids unused links', async (t) => {
  const app = await buildTestApp(t);
  const { db } = app.deps;
  const tokens = [];
  for (let i = 0; i < 3; i += 1) {
    const link = await createLoginLink(db, app.clock, { readOnly: false });
    tokens.push((await redeemLoginLink(db, app.clock, link.token))!);
  }
  await revokeSession(db, app.clock, tokens[0]!.session.id);
  assert.equal(await findLiveSession(db, app.clock, tokens[0]!.token, IDLE_MS), undefined);
  assert.ok(await findLiveSession(db, app.clock, tokens[1]!.token, IDLE_MS));
  const unused = await createLoginLink(db, app.clock, { readOnly: false });
  assert.equal(await revokeAllSessions(db, app.clock), 2);
  for (const { token } of tokens) assert.equal(await findLiveSession(db, app.clock, token, IDLE_MS), undefined);
  assert.equal(await redeemLoginLink(db, app.clock, unused.token), undefined);
});

test(
  'two instances opening one link at once: exactly one session starts',
  { skip: !ON_POSTGRES && 'one SQLite connection cannot race itself' },
  async (t) => {
    const app = await buildTestApp(t);
    const other = await connectSecondInstance(app);
    t.after(() => other.close());
    for (let round = 0; round < 10; round += 1) {
      const link = await createLoginLink(app.deps.db, app.clock, { readOnly: false });
      const results = await Promise.all([
        redeemLoginLink(app.deps.db, app.clock, link.token),
        redeemLoginLink(other.db, app.clock, link.token),
        redeemLoginLink(app.deps.db, app.clock, link.token),
      ]);
      assert.equal(results.filter((result) => result !== undefined).length, 1, `round ${round}`);
    }
    const sessions = await app.deps.db.selectFrom('console_sessions').select('id').execute();
    assert.equal(sessions.length, 10);
  },
);
