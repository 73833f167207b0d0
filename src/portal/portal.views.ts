// The customer portal's pages (SPEC §16): what each page shows, in the customer's locale
// (words: documents.portal-messages.ts and the documents' invoice status words; money and
// dates: documents.format.ts), rendered by Eta templates (templates/*.eta) with auto-escaping
// through the hosted page's escapeHtml: a customer's name, a plan's name or a line's
// description from API clients is text, never markup. Pure but for reading the templates
// and the stylesheet once.
//
// The pages run no script and load nothing but their one stylesheet, served by the app
// (PORTAL_STYLESHEET_PATH); PORTAL_CSP allows exactly that.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { Invoice } from '../modules/invoices/invoices.lifecycle.ts';
import type { PaymentMethod } from '../modules/payment-methods/payment-methods.schemas.ts';
import type { Plan } from '../modules/plans/plans.schemas.ts';
import type { Subscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { CHECKOUT_ORIGINS, escapeHtml } from '../modules/documents/documents.hosted-page.ts';
import { formatDate, formatMoney } from '../modules/documents/documents.format.ts';
import { MESSAGES } from '../modules/documents/documents.messages.ts';
import {
  PORTAL_MESSAGES,
  type PortalMessages,
  type PortalNotice,
  type PortalProblem,
} from '../modules/documents/documents.portal-messages.ts';
import type { DocumentLocale } from '../shared/locales.ts';
import type { InvoicePreview } from '../billing/issue.ts';

const TEMPLATES = new URL('./templates/', import.meta.url);

/** The portal's stylesheet, as served (text/css). */
export const PORTAL_STYLESHEET = readFileSync(new URL('portal.css', TEMPLATES), 'utf8');

/** The stylesheet's path: versioned by its content, so it may be cached for long. */
export const PORTAL_STYLESHEET_PATH = `/portal/portal.${createHash('sha256').update(PORTAL_STYLESHEET).digest('hex').slice(0, 12)}.css`;

/**
 * The Content-Security-Policy of every portal page (SPEC §16): only this origin's resources
 * (the stylesheet), no script at all, never framed, no base URL; forms post to this origin and
 * may be redirected on to the providers' checkout pages (the Pay button, as the hosted page's).
 */
export const PORTAL_CSP = [
  "default-src 'self'",
  "script-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  `form-action 'self' ${CHECKOUT_ORIGINS.join(' ')}`,
  "frame-ancestors 'none'",
].join('; ');

const eta = new Eta({
  views: fileURLToPath(TEMPLATES),
  autoEscape: true,
  escapeFunction: (value: unknown) => escapeHtml(String(value)),
  autoTrim: false,
  cache: true,
});

/** What every portal page's frame shows: the business, whose portal, the link back. */
export interface PortalFrame {
  locale: DocumentLocale;
  businessName: string;
  /** The customer's name, else email; absent on pages without a session. */
  customerName?: string;
  /** The return_url of the portal link, if any. */
  returnUrl?: string | null;
}

function frameOf(frame: PortalFrame, title: string) {
  const m = PORTAL_MESSAGES[frame.locale.language];
  return {
    lang: frame.locale.language,
    title: `${title} · ${frame.businessName}`,
    heading: m.title,
    businessName: frame.businessName,
    stylesheet: PORTAL_STYLESHEET_PATH,
    who: frame.customerName === undefined ? null : { label: m.signedInAs, name: frame.customerName },
    back: frame.returnUrl ? { href: frame.returnUrl, text: m.back } : null,
    refresh: null as string | null,
  };
}

/** A subscription on the overview, with its plan and the plans it may switch to. */
export interface PortalSubscription {
  subscription: Subscription;
  plan: Plan;
  /** PORTAL_PLANS other than its own, in the configured order; none when it cannot switch. */
  switchTo: readonly Plan[];
  /** True when it may be cancelled at period end (trialing or active, not already). */
  cancellable: boolean;
}

/** Everything the overview page shows. Money in minor units; times ISO 8601. */
export interface PortalHome extends PortalFrame {
  csrf: string;
  notice: PortalNotice | undefined;
  /** Finalized invoices, newest first; `payPath` set for those the customer can pay now. */
  invoices: readonly { invoice: Invoice; payPath: string | undefined }[];
  subscriptions: readonly PortalSubscription[];
  methods: readonly PaymentMethod[];
  /** Where "Add a payment method" posts; undefined when no provider can save one. */
  addMethodPath: string | undefined;
  /** ISO 8601: when the session ends. */
  expiresAt: string;
}

function planLabel(plan: Plan, tag: string): string {
  return `${plan.name} (${formatMoney(plan.amount, plan.currency, tag)})`;
}

/** The path of a hosted invoice URL (`<PUBLIC_URL>/i/<token>`): the portal links within its origin. */
function pathOf(url: string): string {
  return new URL(url).pathname;
}

/** The portal's overview (SPEC §16): subscriptions, invoices and payment methods of one customer. Returns a complete HTML document. */
export function renderPortalHome(home: PortalHome): string {
  const { tag, language } = home.locale;
  const m = PORTAL_MESSAGES[language];
  const statusWords = MESSAGES[language].status;
  const view = {
    m,
    csrf: home.csrf,
    notice: home.notice === undefined ? null : m.done[home.notice],
    subscriptions: home.subscriptions.map(({ subscription: s, plan, switchTo, cancellable }) => ({
      id: s.id,
      planName: plan.name,
      price: `${formatMoney(plan.amount, plan.currency, tag)} × ${s.quantity}`,
      status: s.status,
      statusLabel: m.subscriptionStatus[s.status],
      when:
        s.current_period_end === null || !['trialing', 'active', 'past_due'].includes(s.status)
          ? null
          : s.cancel_at_period_end
            ? m.endsOn(formatDate(s.current_period_end, tag))
            : m.renewsOn(formatDate(s.current_period_end, tag)),
      cancel: cancellable ? `/portal/subscriptions/${s.id}/cancel` : null,
      change: `/portal/subscriptions/${s.id}/change`,
      switchTo: switchTo.map((p) => ({ id: p.id, label: planLabel(p, tag) })),
    })),
    invoices: home.invoices.map(({ invoice: i, payPath }) => {
      const page = pathOf(i.hosted_invoice_url!);
      return {
        id: i.id,
        number: i.number ?? i.id,
        date: formatDate(i.created_at, tag, 'short'),
        status: i.status,
        statusLabel: statusWords[i.status],
        total: formatMoney(i.total, i.currency, tag),
        remaining: formatMoney(i.amount_remaining, i.currency, tag),
        page,
        pdf: `${page}.pdf`,
        pay: payPath ?? null,
      };
    }),
    methods: home.methods.map((pm) => ({
      id: pm.id,
      label: [pm.brand ?? pm.type, pm.last4 === null ? null : `•••• ${pm.last4}`].filter((x) => x !== null).join(' '),
      expires:
        pm.exp_month === null || pm.exp_year === null
          ? ''
          : m.expires(String(pm.exp_month).padStart(2, '0'), String(pm.exp_year)),
      isDefault: pm.default,
      makeDefault: `/portal/payment-methods/${pm.id}/default`,
      remove: `/portal/payment-methods/${pm.id}/remove`,
    })),
    addMethod: home.addMethodPath ?? null,
    footer: m.sessionEnds(`${formatDate(home.expiresAt, tag)} ${home.expiresAt.slice(11, 16)} UTC`),
  };
  return eta.render('./home', { ...frameOf(home, m.title), view });
}

/** What the plan change preview page shows (SPEC §16 "preview shown first"). */
export interface PortalChange extends PortalFrame {
  csrf: string;
  subscription: Subscription;
  from: Plan;
  to: Plan;
  preview: InvoicePreview;
  /** ISO 8601 when the change waits for the period end (a downgrade), else undefined. */
  scheduledFor: string | undefined;
}

/** The preview of switching a subscription's plan, with its Confirm form. Returns a complete HTML document. */
export function renderPortalChange(change: PortalChange): string {
  const { tag, language } = change.locale;
  const m: PortalMessages = PORTAL_MESSAGES[language];
  const { preview, subscription: s } = change;
  const money = (minor: number) => formatMoney(minor, preview.currency, tag);
  const now = preview.proration_date !== null && change.scheduledFor === undefined;
  const view = {
    m,
    csrf: change.csrf,
    fromTo: m.changeFromTo(planLabel(change.from, tag), planLabel(change.to, tag)),
    headline: now
      ? m.changeNow(money(preview.amount_due))
      : m.changeNext(money(preview.amount_due), formatDate(preview.period_start, tag)),
    scheduled: change.scheduledFor === undefined ? null : m.changeScheduled(formatDate(change.scheduledFor, tag)),
    lines: preview.lines.map((line) => ({ description: line.description, amount: money(line.amount) })),
    total: money(preview.total),
    confirm: `/portal/subscriptions/${s.id}/change`,
    planId: change.to.id,
    prorationDate: preview.proration_date,
    home: '/portal',
  };
  return eta.render('./change', { ...frameOf(change, m.changeTitle), view });
}

/**
 * The page for `problem` (an expired session, an unknown link or page, a stale form, a refused
 * action, 429, 500) in the portal's style. `link`: where to go from here (the portal, or the
 * link's return_url), none by default.
 */
export function renderPortalProblem(
  problem: PortalProblem,
  frame: PortalFrame,
  link?: { href: string; external: boolean },
): string {
  const m = PORTAL_MESSAGES[frame.locale.language];
  const text = m.problems[problem];
  return eta.render('./problem', {
    ...frameOf({ ...frame, returnUrl: null }, text.title),
    problem: text,
    link: link === undefined ? null : { ...link, text: link.external ? m.back : m.title },
  });
}

/** The page that opens the portal once its cookie is set: a same-site navigation to `/portal` (see portal.routes.ts). */
export function renderPortalOpening(frame: PortalFrame): string {
  const m = PORTAL_MESSAGES[frame.locale.language];
  return eta.render('./problem', {
    ...frameOf(frame, m.title),
    refresh: '/portal',
    problem: { title: m.title, text: '' },
    link: { href: '/portal', external: false, text: m.title },
  });
}
