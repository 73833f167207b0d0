// The `date-time` format every route validates with: RFC 3339 read by shared/timestamps'
// parseTimestamp, and a `compare` that orders instants, so `formatMinimum`/`formatMaximum`
// (schemas.ts timestampInput) bound every date input. ajv-formats' own `compare` answers
// "no opinion" when either side is the epoch (its `!(d1 && d2)` treats 0 as missing) or when
// `Date` cannot read a value it let through (`+05`, `23:59:60`): the bound was then skipped.
import type { Ajv } from 'ajv';
import ajvFormatsModule from 'ajv-formats';
import { parseTimestamp } from '../shared/timestamps.ts';

/** An Ajv plugin as Fastify's `ajv.plugins` takes it. */
type AjvPlugin = (ajv: Ajv, options?: unknown) => Ajv;

// A CommonJS module: its default import is the plugin function itself, named `formatsPlugin`
// (the name Fastify looks for before adding it on its own).
const ajvFormats = ajvFormatsModule as unknown as AjvPlugin;

/** True when `text` is an RFC 3339 date-time of a real instant (SPEC §2 "Time"). */
function isDateTime(text: string): boolean {
  return !Number.isNaN(parseTimestamp(text));
}

/** Orders two date-times by instant; Ajv calls it only after both passed `isDateTime`. */
function compareDateTimes(a: string, b: string): number {
  return parseTimestamp(a) - parseTimestamp(b);
}

/** Replaces ajv-formats' `date-time` with ours; must run after ajv-formats (which adds its own). */
function dateTimeFormat(ajv: Ajv): Ajv {
  return ajv.addFormat('date-time', { type: 'string', validate: isDateTime, compare: compareDateTimes });
}

/**
 * The Ajv plugins of every route validator (Fastify's `ajv.plugins`): ajv-formats (the formats
 * and the `formatMinimum`/`formatMaximum` keywords), then our `date-time`. Listing
 * ajv-formats here keeps Fastify from adding it again after ours.
 */
export const AJV_PLUGINS: AjvPlugin[] = [ajvFormats, dateTimeFormat];
