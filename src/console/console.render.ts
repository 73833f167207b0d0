// The operator console's HTML (SPEC §16): Eta templates (templates/*.eta) with auto-escaping —
// every `<%= %>` goes through the hosted page's escapeHtml, so names, emails, metadata and
// provider payloads are shown as text, never run. The pages load one stylesheet from the app
// (static/console.css) and no script: CONSOLE_CSP allows nothing else.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import { escapeHtml } from '../modules/documents/documents.hosted-page.ts';
import { formatMoney } from '../modules/documents/documents.format.ts';

const TEMPLATES = new URL('./templates/', import.meta.url);

/** The console's stylesheet, served at STYLESHEET_PATH. */
export const STYLESHEET = readFileSync(new URL('./static/console.css', import.meta.url), 'utf8');
/** Where the stylesheet is served. */
export const STYLESHEET_PATH = '/console/static/console.css';

/**
 * The Content-Security-Policy of every console response: the app's own stylesheet and forms
 * posting to the app; no script, no frame, no other origin.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const eta = new Eta({
  views: fileURLToPath(TEMPLATES),
  autoEscape: true,
  escapeFunction: (value: unknown) => escapeHtml(String(value)),
  autoTrim: false,
  cache: true,
});

/** What every page's layout needs besides its own data. */
export interface PageFrame {
  title: string;
  /** The session: its CSRF token goes in every form; `readOnly` hides every button that changes something. */
  session: { csrfToken: string; readOnly: boolean } | undefined;
  /** Whether the test clock pages exist (TEST_CLOCKS). */
  testClocks: boolean;
  /** A fixed message to show at the top (after an action), or undefined. */
  notice?: string;
  /** An error to show at the top (a refused action), or undefined. */
  error?: string;
}

/** Renders template `name` (templates/<name>.eta) with `frame` and `data` into a complete HTML document. */
export function renderPage(name: string, frame: PageFrame, data: object = {}): string {
  return eta.render(`./${name}`, { ...frame, ...data, money, when, json });
}

/** Minor units of `currency` as text (en): `1500, 'EUR'` → "€15.00". */
function money(minor: number | string | null | undefined, currency: string): string {
  if (minor === null || minor === undefined) return '—';
  return formatMoney(Number(minor), currency.toUpperCase(), 'en');
}

/** An ISO 8601 instant as `2026-01-15 10:00:00 UTC`, or an em dash. */
function when(iso: string | null | undefined): string {
  if (iso === null || iso === undefined) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A value as indented JSON text (escaped by the template like any text). */
function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}
