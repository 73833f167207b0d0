// The customer portal over HTTP, as a browser without JavaScript would use it: a link made
// through the API, opened for its cookie, then pages and forms with that cookie.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { csrfTokenOf } from '../../src/modules/portal-sessions/portal-sessions.ts';
import { buildTestApp, type TestApp } from './app.ts';
import { createPlan } from './factories.ts';

export interface PortalClient {
  /** The Cookie header of the session (`portal_session=…`). */
  cookie: string;
  /** The link the API answered. */
  link: { id: string; url: string; expires_at: string; return_url: string | null };
  /** GET `path` with the session's cookie (no redirects followed). */
  get(path: string): Promise<{ status: number; headers: Headers; text: string }>;
  /** POST `fields` as a form to `path` with the session's cookie; `csrf` is added unless given. */
  post(path: string, fields?: Record<string, string>): Promise<{ status: number; headers: Headers; text: string }>;
  /** The CSRF token of the session's forms. */
  csrf: string;
}

/** The value of the first hidden `csrf` field in `html`. */
export function csrfIn(html: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error('no csrf field on the page');
  return match[1]!;
}

/** Makes a portal link for `customerId` through the API and opens it; throws unless both succeed. */
export async function openPortal(
  app: TestApp,
  customerId: string,
  body: Record<string, unknown> = {},
): Promise<PortalClient> {
  const res = await app.request('POST', `/api/customers/${customerId}/portal-sessions`, { body });
  if (res.status !== 201) throw new Error(`portal link: ${res.status} ${res.text}`);
  const link = res.body;
  const opened = await fetch(link.url.replace(app.deps.config.publicUrl, app.baseUrl), { redirect: 'manual' });
  const setCookie = opened.headers.get('set-cookie');
  if (opened.status !== 200 || !setCookie) throw new Error(`portal open: ${opened.status}`);
  const cookie = setCookie.split(';')[0]!;
  const get = async (path: string) => {
    const r = await fetch(app.baseUrl + path, { headers: { cookie }, redirect: 'manual' });
    return { status: r.status, headers: r.headers, text: await r.text() };
  };
  const client: PortalClient = {
    cookie,
    link,
    get,
    csrf: csrfTokenOf(cookie.slice(cookie.indexOf('=') + 1)),
    async post(path, fields = {}) {
      const form = new URLSearchParams({ csrf: client.csrf, ...fields });
      const r = await fetch(app.baseUrl + path, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
        redirect: 'manual',
      });
      return { status: r.status, headers: r.headers, text: await r.text() };
    },
  };
  return client;
}

/**
 * A test app whose PORTAL_PLANS are plans it made: a first app creates `plans` (createPlan
 * overrides), then a second instance over the same database (a file on SQLite), with the same
 * clock, starts with PORTAL_PLANS naming them. Returns the second app and the plans.
 */
export async function appWithPortalPlans(
  t: TestContext,
  plans: readonly Record<string, unknown>[],
  env: Record<string, string> = {},
): Promise<{ app: TestApp; plans: any[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'billing-portal-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const first = await buildTestApp(t, { env, sqliteFile: join(dir, 'billing.db') });
  const made = [];
  for (const plan of plans) made.push(await createPlan(first, plan));
  const app = await buildTestApp(t, {
    env: { ...env, PORTAL_PLANS: made.map((plan) => plan.id).join(',') },
    sameDatabaseAs: first,
  });
  return { app, plans: made };
}
