// What a provider API call can come to besides an answer (SPEC §10), in our words, for both
// clients (paystack/api.ts, stripe/api.ts). Messages are built here from facts we choose to
// keep: never a key, never a raw response body, and a provider's own message only after
// anything that looks like a credential has been cut out of it.
import type { ProviderName } from '../shared/provider-names.ts';

/**
 * - `timeout`: no answer within PROVIDER_TIMEOUT.
 * - `unavailable`: no usable answer: connection failed, 5xx, 429, or a 2xx we cannot read.
 * - `unauthorized`: the provider refused our API key (401/403).
 * - `refused`: the provider refused the request itself (another 4xx), with its reason.
 */
export type ProviderFailure = 'timeout' | 'unavailable' | 'unauthorized' | 'refused';

/** A provider call that did not succeed. `message` is safe to log and to show a client. */
export class ProviderCallError extends Error {
  readonly provider: ProviderName;
  readonly failure: ProviderFailure;
  /** The provider's HTTP status, when an answer arrived. */
  readonly providerStatus: number | null;
  /** The provider's error code (`duplicate_reference`, `parameter_invalid_integer`, …), if it gave one. */
  readonly providerCode: string | null;

  constructor(
    provider: ProviderName,
    failure: ProviderFailure,
    message: string,
    options: { providerStatus?: number | null; providerCode?: string | null } = {},
  ) {
    super(message);
    this.name = 'ProviderCallError';
    this.provider = provider;
    this.failure = failure;
    this.providerStatus = options.providerStatus ?? null;
    this.providerCode = options.providerCode ?? null;
  }

  /**
   * True when the provider may have acted on the request although we got no answer (a
   * timeout, a 5xx, a cut connection): the caller must not assume nothing happened.
   */
  get outcomeUnknown(): boolean {
    return this.failure === 'timeout' || this.failure === 'unavailable';
  }
}

/** One provider call's deadline (CallDeadlines.start). */
export interface CallDeadline {
  /** Aborted when the call must end without an answer: it then fails as a `timeout`. */
  signal: AbortSignal;
  /** The call is over (answered or not): its deadline can go. */
  end(): void;
}

/**
 * Where provider calls get their deadlines (PROVIDER_TIMEOUT, in ms). In real time by default
 * (realTimeDeadlines); tests with fake providers end a call the fake will never answer at
 * once instead of waiting the timeout out (test/helpers/provider-deadlines.ts).
 */
export interface CallDeadlines {
  /** Starts the deadline of a call that must be answered within `timeoutMs`. */
  start(timeoutMs: number): CallDeadline;
}

/** Each call ends `timeoutMs` of real time after it started. */
export const realTimeDeadlines: CallDeadlines = {
  start: (timeoutMs) => ({ signal: AbortSignal.timeout(timeoutMs), end: () => {} }),
};

/** Provider credentials by shape: Paystack/Stripe secret, restricted and publishable keys, Stripe webhook secrets. */
// No word boundary in front: `0sk_live_…` is still a key (over-redacting a word costs nothing).
// Any case: `SK_LIVE_…` is the same key shouted back.
const CREDENTIAL = /(?:sk|rk|pk)_(?:test|live)?_?[A-Za-z0-9_]{4,}|whsec_[A-Za-z0-9]+/gi;
const MAX_MESSAGE = 300;

/** One character of the decoded text and the span [start, end) of the original text it came from. */
interface DecodedChar {
  char: string;
  start: number;
  end: number;
}

// The escapes a provider may wrap an echoed value in: percent-encoding (`%73`, also `%2573`
// after two rounds), HTML character references (`&#115;`, `&#x73;`), JSON/JS escapes (`\u0073`, `\x73`).
const ESCAPE = /%([0-9a-f]{2})|&#x([0-9a-f]{1,6});|&#([0-9]{1,7});|\\u([0-9a-f]{4})|\\x([0-9a-f]{2})/gi;
const DECODE_ROUNDS = 3;

/** `chars` with each escape replaced by the character it stands for, spans kept. */
function decodeOnce(chars: DecodedChar[]): DecodedChar[] {
  const text = chars.map((c) => c.char).join('');
  const out: DecodedChar[] = [];
  let at = 0;
  for (const match of text.matchAll(ESCAPE)) {
    const index = match.index;
    const hex = match[1] ?? match[2] ?? match[4] ?? match[5];
    const code = hex === undefined ? Number(match[3]) : Number.parseInt(hex, 16);
    // One UTF-16 unit per entry: a decoded astral character (never part of a key) stays escaped.
    if (code > 0xffff) continue;
    out.push(...chars.slice(at, index));
    out.push({
      char: String.fromCodePoint(code),
      start: chars[index]!.start,
      end: chars[index + match[0].length - 1]!.end,
    });
    at = index + match[0].length;
  }
  out.push(...chars.slice(at));
  return out;
}

/** Spans of `text` to redact: each of `secrets`, and anything key-shaped, in any case or escaping. */
function secretSpans(text: string, secrets: readonly string[]): [number, number][] {
  // One entry per UTF-16 unit, so that spans index `text` itself.
  let chars: DecodedChar[] = [...text.split('')].map((char, i) => ({ char, start: i, end: i + 1 }));
  const views = [chars];
  for (let round = 0; round < DECODE_ROUNDS; round += 1) {
    const decoded = decodeOnce(chars);
    if (decoded.length === chars.length) break;
    views.push((chars = decoded));
  }
  const patterns = [
    ...secrets.filter((s) => s.trim() !== '').map((s) => new RegExp(s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi')),
    CREDENTIAL,
  ];
  const spans: [number, number][] = [];
  for (const view of views) {
    const decoded = view.map((c) => c.char).join('');
    for (const pattern of patterns) {
      for (const match of decoded.matchAll(pattern)) {
        if (match[0] === '') continue;
        spans.push([view[match.index]!.start, view[match.index + match[0].length - 1]!.end]);
      }
    }
  }
  return spans.sort((a, b) => a[0] - b[0]);
}

/**
 * `text` from a provider, made safe to log and show: each of `secrets` and anything shaped
 * like a credential replaced by `[redacted]` — matched in any letter case and through
 * percent-encoding, HTML character references and `\u`/`\x` escapes, since a provider may echo
 * a key upper-cased or URL-encoded (SPEC §10) — control characters dropped, at most 300
 * characters. Returns '' for anything that is not a string.
 */
export function scrubProviderText(text: unknown, secrets: readonly string[]): string {
  if (typeof text !== 'string') return '';
  // Control characters first: replacing them must not be what joins a secret together again.
  const printable = [...text].map((c) => (c < ' ' || c === '\x7f' ? ' ' : c)).join('');
  let safe = '';
  let at = 0;
  for (const [start, end] of secretSpans(printable, secrets)) {
    if (end <= at) continue;
    if (start >= at) safe += `${printable.slice(at, start)}[redacted]`;
    at = end;
  }
  safe += printable.slice(at);
  return safe.length > MAX_MESSAGE ? `${safe.slice(0, MAX_MESSAGE - 1)}…` : safe;
}

/** Each provider's name as messages and pages show it. */
export const PROVIDER_DISPLAY_NAMES: Record<ProviderName, string> = { paystack: 'Paystack', stripe: 'Stripe' };
