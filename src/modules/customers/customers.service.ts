// Customers: create, read, update (SPEC §3; deleting is billing/customers.ts), and
// find-or-create by email for provider-event attribution. Each change writes its event in the
// same transaction. Emails are unique among live customers, compared by normalizeEmail
// (customers.email.ts).
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { forUpdate } from '../../db/locking.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { AppError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { DOCUMENT_LANGUAGES, isDocumentLocaleTag } from '../../shared/locales.ts';
import { mergeMetadata } from '../../http/metadata.ts';
import { emitEvent } from '../events/events.service.ts';
import { clockFor, testClockExists } from '../test-clocks/test-clocks.time.ts';
import { isValidEmail, normalizeEmail } from './customers.email.ts';
import * as repo from './customers.repository.ts';
import {
  type CreateCustomerInput,
  type Customer,
  CUSTOMER_SORT_FIELDS,
  customerSchema,
  type UpdateCustomerInput,
} from './customers.schemas.ts';
import type { CustomerRow } from '../../db/tables/customers.table.ts';
import { checkAttachableTaxRates, isCountryCode, parseTaxRateIds } from '../tax-rates/tax-rates.service.ts';
import { type Address, isValidTaxId, type TaxId } from './customers.tax.ts';

/** The tax identity columns of a new customer: none, taxed, no address (SPEC §14). */
const NO_TAX_IDENTITY = { tax_rate_ids: '[]', tax_exempt: 'none', tax_ids: '[]', address: null } as const;

/**
 * Checks a customer's tax identity as given (SPEC §14): each tax id has its type's format,
 * the address's country is ISO 3166-1 alpha-2, each tax rate exists and is active (or is
 * attached to the customer already: `attached`). Throws 400 `validation_error` naming the field.
 */
async function checkTaxIdentity(
  db: Kysely<Database> | Transaction<Database>,
  input: { tax_ids?: TaxId[]; address?: Address | null; tax_rate_ids?: string[] },
  attached: readonly string[] = [],
): Promise<void> {
  for (const [index, taxId] of (input.tax_ids ?? []).entries()) {
    if (!isValidTaxId(taxId.type, taxId.value)) {
      throw new ValidationError(
        `tax_ids.${index}.value "${taxId.value}" is not a valid ${taxId.type} number (with its country prefix, e.g. DE123456789)`,
        `tax_ids.${index}.value`,
      );
    }
  }
  const country = input.address?.country;
  if (country !== undefined && !isCountryCode(country)) {
    throw new ValidationError(
      `address.country must be an ISO 3166-1 alpha-2 code such as DE or NG (got "${country}")`,
      'address.country',
    );
  }
  await checkAttachableTaxRates(db, input.tax_rate_ids ?? [], 'tax_rate_ids', attached);
}

/** Metadata JSON text as an object; the empty object (most customers') without parsing. */
function parseMetadata(text: string): Record<string, string> {
  return text === '{}' ? {} : (JSON.parse(text) as Record<string, string>);
}

/** A customers row (or its API columns) as the API shows it: `metadata` parsed from its JSON text. */
export function toCustomer(row: repo.CustomerColumns): Customer {
  const customer = pickFields(customerSchema, row as unknown as Customer);
  customer.metadata = parseMetadata(row.metadata);
  customer.test_clock = row.test_clock_id;
  customer.tax_ids = row.tax_ids === '[]' ? [] : (JSON.parse(row.tax_ids) as TaxId[]);
  customer.tax_rate_ids = parseTaxRateIds(row.tax_rate_ids);
  customer.address = row.address === null ? null : (JSON.parse(row.address) as Address);
  return customer;
}

/**
 * `tag` when it is null or a BCP 47 tag whose language has a catalogue (shared/locales.ts),
 * stored as given; else 400 `validation_error` on `preferred_locale` (SPEC §14 "Documents").
 */
function checkPreferredLocale(tag: string | null): string | null {
  if (tag !== null && !isDocumentLocaleTag(tag)) {
    throw new ValidationError(
      `preferred_locale must be a BCP 47 language tag whose language is one of ${DOCUMENT_LANGUAGES.join(', ')}`,
      'preferred_locale',
    );
  }
  return tag;
}

function emailTaken(email: string): AppError {
  return new AppError('conflict', `a customer with email ${email} already exists`);
}

function externalIdTaken(externalId: string): AppError {
  return new AppError('conflict', `a customer with external_id ${externalId} already exists`);
}

/** True when unique violation `error` is of the external_id index (PostgreSQL names it, SQLite its column). */
function onExternalId(error: unknown): boolean {
  const { constraint, message } = error as { constraint?: string; message?: string };
  return `${constraint ?? ''} ${message ?? ''}`.includes('external_id');
}

/**
 * Runs `work` in a transaction, turning a unique violation (a race) into 409: of the
 * external_id when its index refused the row, else of the email.
 */
async function withEmailGuard<T>(
  db: Kysely<Database>,
  email: string,
  work: (trx: Transaction<Database>) => Promise<T>,
  externalId?: string | null,
) {
  try {
    return await transactionWithRetry(db, work);
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw onExternalId(error) && externalId ? externalIdTaken(externalId) : emailTaken(email);
    }
    throw error;
  }
}

/** Throws 409 `conflict` when another live customer than `self` has external id `externalId`. */
async function checkExternalIdFree(
  trx: Transaction<Database>,
  externalId: string | null | undefined,
  self?: string,
): Promise<void> {
  if (externalId === null || externalId === undefined) return;
  const holder = await trx
    .selectFrom('customers')
    .select('id')
    .where('external_id', '=', externalId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (holder && holder.id !== self) throw externalIdTaken(externalId);
}

/**
 * More work a caller does in the transaction of a customer's creation or change, after the
 * row is written (or locked, when nothing of it changes): the billing core applies a discount
 * there (billing/customers.ts). `clock` is the customer's.
 */
export type WithinCustomerChange = (trx: Transaction<Database>, row: CustomerRow, clock: Clock) => Promise<void>;

/**
 * Creates a customer and emits `customer.created` (then runs `within`, if given, in the same
 * transaction). With `input.test_clock` (only when
 * `options.testClocks`, TEST_CLOCKS; else 400) the customer belongs to that test clock for
 * good and is created at the clock's time (SPEC §11). Throws 409 `conflict` when a live
 * customer already has the email (compared by normalizeEmail: NFC, then lower case), 400
 * for an unknown test clock (a field of the body, like every other 400 here), a tax id not in
 * its type's format, an address country that is not ISO 3166-1 alpha-2, and tax rates that
 * do not exist or are archived (SPEC §14).
 */
export async function createCustomer(
  db: Kysely<Database>,
  apiClock: Clock,
  input: CreateCustomerInput,
  options: { testClocks: boolean } = { testClocks: false },
  within?: WithinCustomerChange,
): Promise<Customer> {
  const testClockId = input.test_clock ?? null;
  if (testClockId !== null && !options.testClocks) {
    throw new ValidationError('test_clock is not accepted: test clocks are disabled (TEST_CLOCKS)', 'test_clock');
  }
  if (testClockId !== null && !(await testClockExists(db, testClockId))) {
    throw new ValidationError(`test_clock ${testClockId} does not exist`, 'test_clock');
  }
  const preferredLocale = checkPreferredLocale(input.preferred_locale ?? null);
  await checkTaxIdentity(db, input);
  const clock = await clockFor(db, { clock: apiClock }, testClockId);
  const now = clock.now().toISOString();
  const row: CustomerRow = repo.withNormalizedName({
    id: newId('customer'),
    email: input.email,
    email_normalized: normalizeEmail(input.email),
    name: input.name ?? null,
    phone: input.phone ?? null,
    preferred_locale: preferredLocale,
    external_id: input.external_id ?? null,
    metadata: JSON.stringify(input.metadata ?? {}),
    test_clock_id: testClockId,
    tax_rate_ids: JSON.stringify(input.tax_rate_ids ?? []),
    tax_exempt: input.tax_exempt ?? 'none',
    tax_ids: JSON.stringify(input.tax_ids ?? []),
    address: input.address ? JSON.stringify(input.address) : null,
    created_at: now,
    updated_at: now,
    deleted_at: null,
  });
  const customer = toCustomer(row);
  await withEmailGuard(
    db,
    input.email,
    async (trx) => {
      if (await repo.findCustomerByNormalizedEmail(trx, row.email_normalized)) throw emailTaken(input.email);
      await checkExternalIdFree(trx, row.external_id);
      await repo.insertCustomer(trx, row);
      await emitEvent(trx, clock, 'customer.created', customer);
      await within?.(trx, row, clock);
    },
    row.external_id,
  );
  return customer;
}

/**
 * The id of the live customer whose email compares equal to `email` (normalizeEmail),
 * else of a customer created with it (`name` cut to 255 characters, no phone, no
 * metadata), counted and announced with `customer.created` in `trx`. A concurrent
 * creation of the same email is absorbed by ON CONFLICT on the unique index of
 * `email_normalized` among live customers and the winner is returned: never an error, never
 * a second customer. `known`: the live customer's id with this email as the caller already
 * read it (null: none then; undefined: not read, read here). Throws when `email` fails
 * isValidEmail (callers check first).
 * Used by provider-event attribution (SPEC §5 "Attribution").
 */
export async function findOrCreateCustomerByEmail(
  trx: Transaction<Database>,
  clock: Clock,
  email: string,
  name: string | null,
  known?: string | null,
): Promise<string> {
  if (!isValidEmail(email)) throw new Error('findOrCreateCustomerByEmail: invalid email');
  const normalized = normalizeEmail(email);
  if (typeof known === 'string') return known;
  // `known` null: read beforehand and not found. A customer made since (by an earlier event
  // of the same batch, or another transaction) makes the insert below lose, as in a race.
  const found = known === null ? undefined : await repo.findCustomerByNormalizedEmail(trx, normalized);
  if (found) return found.id;
  const now = clock.now().toISOString();
  const row: CustomerRow = repo.withNormalizedName({
    id: newId('customer'),
    email,
    email_normalized: normalized,
    name: name === null ? null : name.slice(0, 255),
    phone: null,
    preferred_locale: null,
    external_id: null,
    metadata: '{}',
    test_clock_id: null,
    ...NO_TAX_IDENTITY,
    created_at: now,
    updated_at: now,
    deleted_at: null,
  });
  if (!(await repo.insertCustomerUnlessEmailTaken(trx, row))) {
    // Lost a race: the winner committed first (PostgreSQL waited for it), so it is visible now.
    const winner = await repo.findCustomerByNormalizedEmail(trx, normalized);
    if (!winner) throw new Error('customer email conflict without a customer');
    return winner.id;
  }
  await emitEvent(trx, clock, 'customer.created', toCustomer(row));
  return row.id;
}

/** One live customer. Throws 404 `not_found` for unknown, deleted or malformed ids. */
export async function getCustomer(db: Kysely<Database>, id: string): Promise<Customer> {
  const row = isIdOf('customer', id) ? await repo.findCustomer(db, id) : undefined;
  if (!row) throw new NotFoundError('customer', id);
  return toCustomer(row);
}

/**
 * Who a document already issued to customer `id` is billed to: its name (may be null),
 * email and preferred locale (the document's language), also after the customer was deleted (an invoice keeps its addressee; SPEC §9 hosted
 * invoice page). Undefined for unknown or malformed ids.
 */
export async function getBilledCustomer(
  db: Kysely<Database>,
  id: string,
): Promise<Pick<CustomerRow, 'name' | 'email' | 'preferred_locale' | 'address' | 'tax_ids'> | undefined> {
  return isIdOf('customer', id) ? repo.findBilledCustomer(db, id) : undefined;
}

const customersList = defineList({
  from: (db) => repo.liveCustomers(db),
  select: (query) => query.select(repo.CUSTOMER_COLUMNS),
  sortable: CUSTOMER_SORT_FIELDS,
  keptTotal: 'customers',
  map: (rows) => rows.map(toCustomer),
});

/**
 * A page of live customers: the API's columns only, and `meta.total` from the kept count in
 * the same statement, not a scan.
 */
export async function listCustomers(db: Kysely<Database>, params: ListParams): Promise<Page<Customer>> {
  return customersList.page(db, params);
}

/**
 * Reads a live customer inside `trx`, locking its row on PostgreSQL so concurrent changes
 * queue: a delete and a subscription created for the customer both lock it first, so one
 * sees the other's commit (lock order: src/db/locking.ts). Throws 404 `not_found` for
 * unknown, deleted or malformed ids.
 */
export async function lockCustomer(trx: Transaction<Database>, id: string): Promise<CustomerRow> {
  const query = trx.selectFrom('customers').selectAll().where('id', '=', id).where('deleted_at', 'is', null);
  const row = isIdOf('customer', id) ? await forUpdate(query, trx).executeTakeFirst() : undefined;
  if (!row) throw new NotFoundError('customer', id);
  return row;
}

/**
 * Applies the given fields and emits `customer.updated` when anything changed; `within`, if
 * given, runs in the same transaction once the row is locked.
 * Throws 404 for unknown ids, 409 `conflict` for an email another customer has,
 * 400 when merged metadata would exceed 50 keys or `preferred_locale` has no catalogue, and
 * 400 for a tax identity that fails checkTaxIdentity (an archived tax rate the customer has
 * already may stay).
 */
export async function updateCustomer(
  db: Kysely<Database>,
  apiClock: Clock,
  id: string,
  patch: UpdateCustomerInput,
  within?: WithinCustomerChange,
): Promise<Customer> {
  if (patch.preferred_locale !== undefined) checkPreferredLocale(patch.preferred_locale);
  return withEmailGuard(
    db,
    patch.email ?? '',
    async (trx) => {
      const row = await lockCustomer(trx, id);
      const clock = await clockFor(trx, { clock: apiClock }, row.test_clock_id);
      const current = toCustomer(row);
      await checkTaxIdentity(trx, patch, current.tax_rate_ids);
      const next: Customer = {
        ...current,
        email: patch.email ?? current.email,
        name: patch.name === undefined ? current.name : patch.name,
        phone: patch.phone === undefined ? current.phone : patch.phone,
        preferred_locale: patch.preferred_locale === undefined ? current.preferred_locale : patch.preferred_locale,
        external_id: patch.external_id === undefined ? current.external_id : patch.external_id,
        metadata: patch.metadata === undefined ? current.metadata : mergeMetadata(current.metadata, patch.metadata),
        tax_exempt: patch.tax_exempt ?? current.tax_exempt,
        tax_ids: patch.tax_ids ?? current.tax_ids,
        tax_rate_ids: patch.tax_rate_ids ?? current.tax_rate_ids,
        address: patch.address === undefined ? current.address : patch.address,
      };
      const changed =
        next.email !== current.email ||
        next.name !== current.name ||
        next.phone !== current.phone ||
        next.preferred_locale !== current.preferred_locale ||
        next.external_id !== current.external_id ||
        next.tax_exempt !== current.tax_exempt ||
        JSON.stringify([next.metadata, next.tax_ids, next.tax_rate_ids, next.address]) !==
          JSON.stringify([current.metadata, current.tax_ids, current.tax_rate_ids, current.address]);
      await within?.(trx, row, clock);
      if (!changed) return current;
      // Recomputed only when the email changes: a row that migration 0008 found colliding
      // keeps its marker (and its name/phone/metadata stay editable) until it gets an address.
      const emailNormalized = next.email === current.email ? row.email_normalized : normalizeEmail(next.email);
      if (emailNormalized !== row.email_normalized) {
        const holder = await repo.findCustomerByNormalizedEmail(trx, emailNormalized);
        if (holder && holder.id !== id) throw emailTaken(next.email);
      }
      if (next.external_id !== current.external_id) await checkExternalIdFree(trx, next.external_id, id);
      next.updated_at = clock.now().toISOString();
      await repo.updateCustomer(trx, id, {
        email: next.email,
        email_normalized: emailNormalized,
        name: next.name,
        phone: next.phone,
        preferred_locale: next.preferred_locale,
        external_id: next.external_id,
        metadata: JSON.stringify(next.metadata),
        tax_exempt: next.tax_exempt,
        tax_ids: JSON.stringify(next.tax_ids),
        tax_rate_ids: JSON.stringify(next.tax_rate_ids),
        address: next.address === null ? null : JSON.stringify(next.address),
        updated_at: next.updated_at,
      });
      await emitEvent(trx, clock, 'customer.updated', next);
      return next;
    },
    patch.external_id,
  );
}
