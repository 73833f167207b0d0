// The dunning resources (a case, a case with its steps, an upcoming case, a past-due
// subscription), defined once: these TypeBox schemas serialize and document the routes, and
// the API types are their static types (SPEC §4 "Dunning case").
import Type, { type Static } from 'typebox';
import { Nullable, nullableTimestamp, ref, simpleListOfSchema, StringEnum, timestamp } from '../../http/schemas.ts';
import { DUNNING_CASE_STATUSES, DUNNING_REASONS } from '../../db/tables/dunning.table.ts';

const caseProperties = {
  id: Type.String({ description: '`dun_…`' }),
  customer_id: Type.String(),
  subscription_id: Type.String(),
  payment_id: Nullable(Type.String({ description: 'The failed payment that opened the case.' })),
  invoice_id: Nullable(
    Type.String({
      description:
        'The invoice (`inv_…`) the case chases (SPEC §9): the case recovers when it is paid, and the final action `cancel` marks it uncollectible. Null for cases opened before invoices.',
    }),
  ),
  status: StringEnum(DUNNING_CASE_STATUSES),
  reason: StringEnum(DUNNING_REASONS),
  attempts: Type.Integer({ description: 'Failed payments while the case was open, the first included.' }),
  step: Type.Integer({ description: 'Steps of DUNNING_SCHEDULE taken so far.' }),
  next_action_at: Type.Unsafe<string | null>({
    ...nullableTimestamp,
    description: 'When the next reminder, or after the last one the final action, is due; null once closed.',
  }),
  amount_due: Type.Integer({ description: 'Minor units.' }),
  currency: Type.String(),
  opened_at: timestamp,
  closed_at: nullableTimestamp,
  created_at: timestamp,
  updated_at: timestamp,
};

const CASE_EXAMPLE = {
  id: 'dun_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  subscription_id: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  payment_id: 'pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  invoice_id: 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  status: 'open',
  reason: 'payment_failed',
  attempts: 1,
  step: 1,
  next_action_at: '2026-02-05T10:00:00.000Z',
  amount_due: 5000,
  currency: 'NGN',
  opened_at: '2026-01-29T10:00:04.120Z',
  closed_at: null,
  created_at: '2026-01-29T10:00:04.120Z',
  updated_at: '2026-02-01T10:00:00.000Z',
} as const;

/** A dunning case as the API returns it: the row's columns; `amount_due` in minor units. */
export const caseSchema = Type.Object(caseProperties, {
  $id: 'DunningCase',
  description: 'The follow-up of a failed payment: reminders on DUNNING_SCHEDULE, then the final action.',
  examples: [CASE_EXAMPLE],
});
export type DunningCase = Static<typeof caseSchema>;

export const caseListSchema = simpleListOfSchema('DunningCaseList', caseSchema);

/** The statuses a dunning retry's charge can have when its reminder goes out (SPEC §10). */
export const REMINDER_CHARGE_STATUSES = ['failed', 'requires_action', 'unanswered'] as const;

/** The charge a step made before its reminder (SPEC §10 "Dunning retries"). */
const reminderChargeSchema = Type.Object(
  {
    attempt_id: Nullable(
      Type.String({ description: 'The charge attempt (`pat_…`, GET /api/invoices/{id}); null when unanswered.' }),
    ),
    status: StringEnum(REMINDER_CHARGE_STATUSES, {
      description:
        '`failed`: declined or refused; `requires_action`: the customer must act (authentication, OTP); `unanswered`: no outcome within the wait (the charge may still settle the invoice).',
    }),
    failure_code: Nullable(Type.String({ description: 'e.g. `insufficient_funds`, `authentication_required`.' })),
    failure_message: Nullable(Type.String()),
  },
  { description: "The step's charge of the saved default method; null when the step charged nothing." },
);
export type ReminderCharge = Static<typeof reminderChargeSchema>;

/**
 * The data of `dunning.reminder`: the case, whether this reminder is the last one, where the
 * customer pays, and the charge the step made first (SPEC §10 "Dunning retries").
 */
export const reminderSchema = Type.Object(
  {
    ...caseProperties,
    final: Type.Boolean({ description: 'The last reminder, the warning before the final action.' }),
    hosted_invoice_url: Nullable(
      Type.String({
        description: "The hosted page of the case's invoice (pay it there); null for a case chasing no invoice.",
      }),
    ),
    action_url: Nullable(
      Type.String({
        description:
          "Where the customer must act because this step's charge needed them (SPEC §10): the provider's page when it gave one (Paystack's `authorization_url`), else the hosted invoice page. Null otherwise. The invoice is not charged automatically again.",
      }),
    ),
    charge: Nullable(reminderChargeSchema),
  },
  {
    $id: 'DunningReminder',
    description: 'A dunning case as a reminder step left it.',
    examples: [
      {
        ...CASE_EXAMPLE,
        final: false,
        hosted_invoice_url: 'https://billing.example.com/i/9bN3wQ0sVf4r2kq8H6tLxYpZ1cDmE7aR5uJgKoIsT0w',
        action_url: null,
        charge: {
          attempt_id: 'pat_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
          status: 'failed',
          failure_code: 'insufficient_funds',
          failure_message: 'Insufficient Funds',
        },
      },
    ],
  },
);
export type DunningReminder = Static<typeof reminderSchema>;

/** One step taken on a case: when, whether it was the final warning, and its event. */
export const stepSchema = Type.Object(
  {
    step: Type.Integer(),
    final: Type.Boolean({ description: 'The last reminder, the warning before the final action.' }),
    taken_at: timestamp,
    event_id: Type.String({ description: 'The `dunning.reminder` event this step emitted.' }),
  },
  {
    $id: 'DunningStep',
    description: 'A reminder taken on a dunning case.',
    examples: [
      { step: 1, final: false, taken_at: '2026-02-01T10:00:00.000Z', event_id: 'evt_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' },
    ],
  },
);
export type DunningStep = Static<typeof stepSchema>;

export const caseWithStepsSchema = Type.Object(
  { ...caseProperties, steps: Type.Array(ref(stepSchema)) },
  {
    $id: 'DunningCaseWithSteps',
    description: 'A dunning case and every reminder taken on it, oldest first.',
    examples: [
      {
        ...CASE_EXAMPLE,
        steps: [
          { step: 1, final: false, taken_at: '2026-02-01T10:00:00.000Z', event_id: 'evt_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' },
        ],
      },
    ],
  },
);
export type DunningCaseWithSteps = Static<typeof caseWithStepsSchema>;

/** An open case with what happens next: reminder step `next_step` (null when the final action is next). */
export const upcomingSchema = Type.Object(
  {
    ...caseProperties,
    next_action: StringEnum(['reminder', 'final_action']),
    next_step: Nullable(Type.Integer()),
  },
  {
    $id: 'UpcomingDunningCase',
    description: 'An open dunning case and the action due next.',
    examples: [{ ...CASE_EXAMPLE, next_action: 'reminder', next_step: 2 }],
  },
);
export type UpcomingCase = Static<typeof upcomingSchema>;

export const upcomingListSchema = simpleListOfSchema('UpcomingDunningCaseList', upcomingSchema);

/**
 * One row of the past-due list. `dunning_case_id`: the open case; null once dunning is
 * exhausted (`unpaid`) or before any case. `overdue_since`: the latest case's opening, else
 * the period end; `days_overdue`: whole days from then to now.
 */
export const pastDueSchema = Type.Object(
  {
    subscription_id: Type.String(),
    customer_id: Type.String(),
    customer_email: Type.String(),
    plan_id: Type.String(),
    status: StringEnum(['past_due', 'unpaid']),
    dunning_case_id: Nullable(Type.String({ description: 'The open case, if any.' })),
    amount_due: Type.Integer({ description: 'Minor units.' }),
    currency: Type.String(),
    overdue_since: timestamp,
    days_overdue: Type.Integer(),
  },
  {
    $id: 'PastDueSubscription',
    description: 'A subscription whose payment is overdue, with what is owed and since when.',
    examples: [
      {
        subscription_id: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        customer_email: 'ada@example.com',
        plan_id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        status: 'past_due',
        dunning_case_id: 'dun_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        amount_due: 5000,
        currency: 'NGN',
        overdue_since: '2026-01-29T10:00:04.120Z',
        days_overdue: 3,
      },
    ],
  },
);
export type PastDueSubscription = Static<typeof pastDueSchema>;

export const pastDueListSchema = simpleListOfSchema('PastDueSubscriptionList', pastDueSchema);
