// The only writer of `payment_methods` (SPEC §10): saves a reusable method learned from a
// succeeded payment, finds the one to charge, detaches and chooses the default. The provider
// credential is encrypted here with the newest of DATA_ENCRYPTION_KEYS and decrypted only by
// the finders of a method to charge, for the provider call; nothing else sees it.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Config } from '../../config.ts';
import type { ProviderName } from '../../shared/provider-names.ts';
import { inList } from '../../db/bulk.ts';
import { compiledQuery, type Param } from '../../db/compiled-queries.ts';
import type { Database } from '../../db/database.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { encryptSecret, openSecret } from '../../shared/encryption.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { emitEvent, emitEventIfInserted } from '../events/events.service.ts';
import { PAYMENT_METHOD_SORT_FIELDS, type PaymentMethod, paymentMethodSchema } from './payment-methods.schemas.ts';
import type { PaymentMethodRow, PaymentMethodsTable } from '../../db/tables/payment-methods.table.ts';

export type { PaymentMethodRow };

/** What saving and charging need: the clock and the data encryption keys (newest first). */
export interface PaymentMethodContext {
  clock: Clock;
  config: Pick<Config, 'dataEncryptionKey' | 'dataEncryptionKeys'>;
}

/** A reusable method as a provider reported it (SPEC §10). Display fields may be null. */
export interface ReportedPaymentMethod {
  customerId: string;
  provider: ProviderName;
  /** Paystack `authorization.signature`; Stripe PaymentMethod id. */
  fingerprint: string;
  /** Plaintext: Paystack `authorization_code`, Stripe PaymentMethod id `pm_…`. Stored encrypted. */
  credential: string;
  /** Stripe `cus_…`; null for Paystack. */
  providerCustomerId: string | null;
  email: string | null;
  type: string;
  brand: string | null;
  last4: string | null;
  expMonth: number | null;
  expYear: number | null;
}

/** Thrown when a method must be encrypted or decrypted and DATA_ENCRYPTION_KEY is not set. */
export class EncryptionKeyMissingError extends Error {
  constructor() {
    super('DATA_ENCRYPTION_KEY is not set: saved payment methods cannot be stored or charged');
    this.name = 'EncryptionKeyMissingError';
  }
}

function keyOf(ctx: Pick<PaymentMethodContext, 'config'>): Buffer {
  const key = ctx.config.dataEncryptionKey;
  if (key === undefined) throw new EncryptionKeyMissingError();
  return key;
}

function newMethodRow(ctx: PaymentMethodContext, method: ReportedPaymentMethod): PaymentMethodsTable {
  const now = ctx.clock.now().toISOString();
  return {
    id: newId('paymentMethod'),
    customer_id: method.customerId,
    provider: method.provider,
    status: 'active',
    fingerprint: method.fingerprint,
    credential: encryptSecret(keyOf(ctx), method.credential),
    provider_customer_id: method.providerCustomerId,
    email: method.email,
    type: method.type,
    brand: method.brand,
    last4: method.last4,
    exp_month: method.expMonth,
    exp_year: method.expYear,
    default_at: now,
    created_at: now,
    updated_at: now,
    detached_at: null,
  };
}

/**
 * The insert of a new method, unless the customer already has a live one with the same
 * provider and fingerprint: the partial unique index (customer, provider, fingerprint) among
 * live rows decides, so two reports of one card at once make one row on both databases.
 * Returns the id when it inserted.
 */
function insertUnlessSaved(trx: Transaction<Database>, row: PaymentMethodsTable) {
  return trx
    .insertInto('payment_methods')
    .values(row)
    .onConflict((oc) =>
      oc
        .columns(['customer_id', 'provider', 'fingerprint'])
        .where(sql<boolean>`status = 'active'`)
        .doNothing(),
    )
    .returning('id');
}

/**
 * Saves `method` for its customer in `trx`, unless the customer already has a live method
 * with the same provider and fingerprint (the same card reported again: nothing changes, and
 * it does not become the default again). A new method becomes the customer's default (the
 * latest reusable one, SPEC §10) and emits `payment_method.attached` (data: the PaymentMethod
 * view, no secret). Returns the row and whether it was created. Throws
 * EncryptionKeyMissingError without DATA_ENCRYPTION_KEY (config refuses to start so).
 */
export async function savePaymentMethod(
  trx: Transaction<Database>,
  ctx: PaymentMethodContext,
  method: ReportedPaymentMethod,
): Promise<{ row: PaymentMethodRow; created: boolean }> {
  const row = newMethodRow(ctx, method);
  const inserted = await insertUnlessSaved(trx, row).executeTakeFirst();
  if (inserted) {
    await emitEvent(trx, ctx.clock, 'payment_method.attached', toPaymentMethod(row, true));
    return { row, created: true };
  }
  const existing = await trx
    .selectFrom('payment_methods')
    .selectAll()
    .where('customer_id', '=', method.customerId)
    .where('provider', '=', method.provider)
    .where('fingerprint', '=', method.fingerprint)
    .where('status', '=', 'active')
    .executeTakeFirstOrThrow();
  return { row: existing, created: false };
}

/**
 * savePaymentMethod for the notify path (a succeeded payment that carried a reusable method,
 * SPEC §10), answering nothing: the same insert-unless-saved and `payment_method.attached`
 * (events.service emitEventIfInserted), after one indexed read that spares the usual case — a
 * returning payer's card, already saved — the encryption and the insert; `saved` is that
 * read's answer when the caller has it for its batch (findPayersByEmail). Throws
 * EncryptionKeyMissingError without DATA_ENCRYPTION_KEY.
 */
export async function rememberPaymentMethod(
  trx: Transaction<Database>,
  ctx: PaymentMethodContext,
  method: ReportedPaymentMethod,
  saved?: boolean,
): Promise<void> {
  const key = { customer_id: method.customerId, provider: method.provider, fingerprint: method.fingerprint };
  // `saved`: answered for the whole batch beforehand (findPayersByEmail). Were the card saved
  // since (by an earlier event of the batch), the insert below still makes no second row.
  if (saved ?? (await liveMethodByFingerprint.executeTakeFirst(trx, key)) !== undefined) return;
  const row = newMethodRow(ctx, method);
  await emitEventIfInserted(
    trx,
    ctx.clock,
    insertUnlessSaved(trx, row),
    'payment_method.attached',
    toPaymentMethod(row, true),
  );
}

/** A payer a batch of payment reports names by email, with the reusable card it reports. */
export interface PayerWanted {
  /** normalizeEmail of the report's email. */
  emailNormalized: string;
  provider: ProviderName;
  /** The reported method's fingerprint, or null when the report carries none. */
  fingerprint: string | null;
}

/** What findPayersByEmail found for one PayerWanted whose email is a live customer's. */
export interface PayerFound extends PayerWanted {
  customerId: string;
  /** The customer has a live method with this provider and fingerprint (false when fingerprint is null). */
  saved: boolean;
}

/**
 * For a batch of payment reports (SPEC §5 attribution by email, §10 saved cards), in ONE
 * statement: the live customer of each wanted email and whether that customer already has a
 * live method with the wanted provider and fingerprint — the lookups findOrCreateCustomerByEmail
 * and rememberPaymentMethod make per report, answered together. Emails without a live
 * customer are left out. Reads only (nothing locked, as the per-report reads).
 */
export async function findPayersByEmail(
  trx: Transaction<Database>,
  wanted: readonly PayerWanted[],
): Promise<PayerFound[]> {
  if (wanted.length === 0) return [];
  const named = sql.join(
    wanted.map(
      ({ emailNormalized, provider, fingerprint }) => sql`(${emailNormalized}, ${provider}, ${fingerprint ?? ''})`,
    ),
  );
  // A missing fingerprint travels as '' (no method has one) so the CTE's column stays text.
  const { rows } = await sql<{
    email: string;
    provider: ProviderName;
    fingerprint: string;
    customer_id: string;
    method_id: string | null;
  }>`
    with n(email, provider, fingerprint) as (values ${named})
    select n.email, n.provider, n.fingerprint, c.id as customer_id, m.id as method_id
    from n
    join customers c on c.email_normalized = n.email and c.deleted_at is null
    left join payment_methods m on m.customer_id = c.id and m.provider = n.provider
      and m.fingerprint = n.fingerprint and m.status = 'active'`.execute(trx);
  return rows.map((row) => ({
    emailNormalized: row.email,
    provider: row.provider,
    fingerprint: row.fingerprint === '' ? null : row.fingerprint,
    customerId: row.customer_id,
    saved: row.method_id !== null,
  }));
}

/** The live method of a customer with a provider and fingerprint, compiled once (notify path). */
const liveMethodByFingerprint = compiledQuery(
  (db, param: Param<{ customer_id: string; provider: ProviderName; fingerprint: string }>) =>
    db
      .selectFrom('payment_methods')
      .select('id')
      .where('customer_id', '=', param('customer_id'))
      .where('provider', '=', param('provider'))
      .where('fingerprint', '=', param('fingerprint'))
      .where('status', '=', 'active'),
);

/** A row as the API shows it (no secret: pickFields keeps the schema's fields only). */
function toPaymentMethod(row: PaymentMethodRow, isDefault: boolean): PaymentMethod {
  return pickFields(paymentMethodSchema, {
    ...row,
    exp_month: row.exp_month === null ? null : Number(row.exp_month),
    exp_year: row.exp_year === null ? null : Number(row.exp_year),
    default: isDefault && row.status === 'active',
  });
}

/** A method ready to charge: the decrypted credential and what the provider call needs. */
export interface ChargeableMethod {
  /** `pm_…` (ours). */
  id: string;
  provider: ProviderName;
  /**
   * Plaintext Paystack authorization_code or Stripe PaymentMethod id. A secret: never log it.
   * Null when no configured key opens the stored value (DATA_ENCRYPTION_KEYS lost the key it
   * was saved with): the method cannot be charged, and its charge fails alone (SPEC §10).
   */
  credential: string | null;
  /** Stripe `cus_…`; null for Paystack. */
  providerCustomerId: string | null;
  /** The email the method is known under at the provider; null: use the customer's. */
  email: string | null;
}

/** The columns a charge needs, the credential among them (read only by the two finders). */
const CHARGE_COLUMNS = ['id', 'provider', 'credential', 'provider_customer_id', 'email'] as const;

/** `row` ready to charge: the credential opened with any of the keys, null when none opens it. */
function toChargeable(
  row: Pick<PaymentMethodRow, (typeof CHARGE_COLUMNS)[number]>,
  ctx: Pick<PaymentMethodContext, 'config'>,
): ChargeableMethod {
  return {
    id: row.id,
    provider: row.provider,
    credential: openSecret(ctx.config.dataEncryptionKeys, row.credential)?.plaintext ?? null,
    providerCustomerId: row.provider_customer_id,
    email: row.email,
  };
}

/**
 * Customer `customerId`'s default method: the live one with the latest `default_at` (ties:
 * the latest id), decrypted for charging; undefined when the customer has none. A stored
 * value no configured key opens comes back with `credential: null` (never thrown: one such
 * row must not stop other customers' charges).
 */
export async function findDefaultPaymentMethod(
  db: Kysely<Database>,
  ctx: Pick<PaymentMethodContext, 'config'>,
  customerId: string,
): Promise<ChargeableMethod | undefined> {
  const row = await db
    .selectFrom('payment_methods')
    .select(CHARGE_COLUMNS)
    .where('customer_id', '=', customerId)
    .where('status', '=', 'active')
    .orderBy('default_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
  if (!row) return undefined;
  return toChargeable(row, ctx);
}

/**
 * findDefaultPaymentMethod for several customers in ONE statement (a charge batch's claim):
 * each customer's default method, decrypted (the key cache of openSecret), keyed by customer
 * id; a customer without a live method is absent. Reads only.
 */
export async function findDefaultPaymentMethods(
  db: Kysely<Database>,
  ctx: Pick<PaymentMethodContext, 'config'>,
  customerIds: readonly string[],
): Promise<Map<string, ChargeableMethod>> {
  const found = new Map<string, ChargeableMethod>();
  if (customerIds.length === 0) return found;
  const rows = await db
    .selectFrom('payment_methods')
    .select([...CHARGE_COLUMNS, 'customer_id'])
    .where(inList(db, 'customer_id', [...new Set(customerIds)]))
    .where('status', '=', 'active')
    .orderBy('default_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  // Newest default first: the first row of a customer is theirs.
  for (const row of rows) if (!found.has(row.customer_id)) found.set(row.customer_id, toChargeable(row, ctx));
  return found;
}

/** The columns a view needs (never the credential). */
const VIEW_COLUMNS = [
  'id',
  'customer_id',
  'provider',
  'status',
  'type',
  'brand',
  'last4',
  'exp_month',
  'exp_year',
  'default_at',
  'created_at',
  'detached_at',
] as const;

type ViewRow = Pick<PaymentMethodRow, (typeof VIEW_COLUMNS)[number]>;

/** The id of customer `customerId`'s default method (see findDefaultPaymentMethod), if any. */
async function defaultMethodId(db: Kysely<Database>, customerId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('payment_methods')
    .select('id')
    .where('customer_id', '=', customerId)
    .where('status', '=', 'active')
    .orderBy('default_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
  return row?.id;
}

const paymentMethodsList = defineList({
  from: (db, param: Param<{ customerId: string }>) =>
    db.selectFrom('payment_methods').where('customer_id', '=', param('customerId')).where('status', '=', 'active'),
  select: (query) => query.select(VIEW_COLUMNS),
  sortable: PAYMENT_METHOD_SORT_FIELDS,
  map: (rows: ViewRow[]) => rows,
});

/**
 * A page of customer `customerId`'s active methods (SPEC §2 Lists, sort `created_at`), each
 * with `default`. Detached methods are not listed. The caller checks the customer is live
 * (payment-methods.service: 404 otherwise).
 */
export async function listPaymentMethods(
  db: Kysely<Database>,
  customerId: string,
  params: ListParams,
): Promise<Page<PaymentMethod>> {
  const [page, defaultId] = await Promise.all([
    paymentMethodsList.page(db, params, {}, { customerId }),
    defaultMethodId(db, customerId),
  ]);
  return {
    ...page,
    data: page.data.map((row) => toPaymentMethod(row as PaymentMethodRow, row.id === defaultId)),
  };
}

/**
 * Customer `customerId`'s active method `id`, or throws 404 `not_found` (unknown, malformed,
 * another customer's, or detached). The caller holds the customer's lock
 * (payment-methods.service), so changes to one customer's methods queue.
 */
async function lockActiveMethod(trx: Transaction<Database>, customerId: string, id: string): Promise<ViewRow> {
  const row = isIdOf('paymentMethod', id)
    ? await trx
        .selectFrom('payment_methods')
        .select(VIEW_COLUMNS)
        .where('id', '=', id)
        .where('customer_id', '=', customerId)
        .where('status', '=', 'active')
        .executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('payment method', id);
  return row;
}

/**
 * Detaches customer `customerId`'s method `id` (DELETE, SPEC §10): `detached`, never charged
 * again, no longer listed; the default passes to the live method saved or chosen last. Emits
 * `payment_method.detached` (data: the method as detached). Throws 404 `not_found` (see
 * lockActiveMethod).
 */
export async function detachPaymentMethod(
  trx: Transaction<Database>,
  clock: Clock,
  customerId: string,
  id: string,
): Promise<PaymentMethod> {
  const row = await lockActiveMethod(trx, customerId, id);
  const now = clock.now().toISOString();
  await trx
    .updateTable('payment_methods')
    .set({ status: 'detached', detached_at: now, updated_at: now })
    .where('id', '=', id)
    .execute();
  const method = toPaymentMethod({ ...row, status: 'detached', detached_at: now } as PaymentMethodRow, false);
  await emitEvent(trx, clock, 'payment_method.detached', method);
  return method;
}

/**
 * Detaches every active method of customer `customerId` (SPEC §10: a deleted customer's
 * methods are never charged again), in the caller's transaction, which holds the customer's
 * lock and marks it deleted (customers.service deleteCustomer). Each emits
 * `payment_method.detached` (data: the method as detached, `default: false`), oldest first.
 * Returns how many were detached.
 */
export async function detachCustomerPaymentMethods(
  trx: Transaction<Database>,
  clock: Clock,
  customerId: string,
): Promise<number> {
  const rows = await trx
    .selectFrom('payment_methods')
    .select(VIEW_COLUMNS)
    .where('customer_id', '=', customerId)
    .where('status', '=', 'active')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  if (rows.length === 0) return 0;
  const now = clock.now().toISOString();
  await trx
    .updateTable('payment_methods')
    .set({ status: 'detached', detached_at: now, updated_at: now })
    .where('customer_id', '=', customerId)
    .where('status', '=', 'active')
    .execute();
  for (const row of rows) {
    const method = toPaymentMethod({ ...row, status: 'detached', detached_at: now } as PaymentMethodRow, false);
    await emitEvent(trx, clock, 'payment_method.detached', method);
  }
  return rows.length;
}

/**
 * Makes customer `customerId`'s method `id` the default (PATCH `{default: true}`, SPEC §10):
 * its `default_at` moves past every other live method's (now, or 1 ms after the latest when
 * the clock has not passed it), so automatic charges use it until another method is saved or
 * chosen. `default: false` is refused (400: choose another method instead). No event. Throws
 * 404 `not_found` (see lockActiveMethod).
 */
export async function updatePaymentMethod(
  trx: Transaction<Database>,
  clock: Clock,
  customerId: string,
  id: string,
  input: { default: boolean },
): Promise<PaymentMethod> {
  const row = await lockActiveMethod(trx, customerId, id);
  if (!input.default) {
    throw new ValidationError(
      'default can only be set to true: make another payment method the default instead',
      'default',
    );
  }
  if ((await defaultMethodId(trx, customerId)) === id) return toPaymentMethod(row as PaymentMethodRow, true);
  const latest = await trx
    .selectFrom('payment_methods')
    .select((eb) => eb.fn.max('default_at').as('latest'))
    .where('customer_id', '=', customerId)
    .where('status', '=', 'active')
    .executeTakeFirst();
  const now = clock.now().getTime();
  const after = latest?.latest ? new Date(latest.latest).getTime() + 1 : now;
  const defaultAt = new Date(Math.max(now, after)).toISOString();
  await trx
    .updateTable('payment_methods')
    .set({ default_at: defaultAt, updated_at: clock.now().toISOString() })
    .where('id', '=', id)
    .execute();
  return toPaymentMethod({ ...row, default_at: defaultAt } as PaymentMethodRow, true);
}

// ---- Automatic collection (billing/charges.ts) ----

/** True when customer `customerId` has a live saved method (so a renewal invoice is charged). */
export async function hasDefaultPaymentMethod(db: Kysely<Database>, customerId: string): Promise<boolean> {
  return (await activeMethodOf.executeTakeFirst(db, { customerId })) !== undefined;
}

/** Which of customers `customerIds` have a default (active) payment method: hasDefaultPaymentMethod for a batch, one read. */
export async function customersWithDefaultPaymentMethod(
  db: Kysely<Database>,
  customerIds: readonly string[],
): Promise<Set<string>> {
  if (customerIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('payment_methods')
    .select('customer_id')
    .distinct()
    .where(inList(db, 'customer_id', [...new Set(customerIds)]))
    .where('status', '=', 'active')
    .execute();
  return new Set(rows.map((row) => row.customer_id));
}

const activeMethodOf = compiledQuery((db, param: Param<{ customerId: string }>) =>
  db
    .selectFrom('payment_methods')
    .select('id')
    .where('customer_id', '=', param('customerId'))
    .where('status', '=', 'active')
    .limit(1),
);

/**
 * Method `id` decrypted for charging, whatever its status: an attempt started with it is
 * resolved by repeating the very same request, even if the method was detached since.
 * Undefined when unknown; `credential: null` as findDefaultPaymentMethod.
 */
export async function findPaymentMethodToCharge(
  db: Kysely<Database>,
  ctx: Pick<PaymentMethodContext, 'config'>,
  id: string,
): Promise<ChargeableMethod | undefined> {
  const row = await db.selectFrom('payment_methods').select(CHARGE_COLUMNS).where('id', '=', id).executeTakeFirst();
  if (!row) return undefined;
  return toChargeable(row, ctx);
}

/**
 * Deletes every payment method of customers `customerIds` (`cus_…`, locked by the caller),
 * whatever its status: a test clock's delete (SPEC §11 "Deleting"), just before the customers
 * go. No events (the clock's customers vanish whole).
 */
export async function deletePaymentMethodsOfCustomers(
  trx: Transaction<Database>,
  customerIds: readonly string[],
): Promise<void> {
  if (customerIds.length === 0) return;
  await trx.deleteFrom('payment_methods').where('customer_id', 'in', customerIds).execute();
}
