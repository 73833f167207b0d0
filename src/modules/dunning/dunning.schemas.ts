// The dunning resources (a case, a case with its steps, an upcoming case, a past-due
// subscription), defined once: these TypeBox schemas serialize and document the routes, and
// the API types are their static types (SPEC §4 "Dunning case").
import Type, { type Static } from 'typebox';
import { Nullable, nullableTimestamp, StringEnum, timestamp } from '../../http/schemas.ts';
import { DUNNING_CASE_STATUSES, DUNNING_REASONS } from './dunning.table.ts';

const caseProperties = {
  id: Type.String({ description: '`dun_…`' }),
  customer_id: Type.String(),
  subscription_id: Type.String(),
  payment_id: Nullable(Type.String({ description: 'The failed payment that opened the case.' })),
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

/** A dunning case as the API returns it: the row's columns; `amount_due` in minor units. */
export const caseSchema = Type.Object(caseProperties);
export type DunningCase = Static<typeof caseSchema>;

/** One step taken on a case: when, whether it was the final warning, and its event. */
export const stepSchema = Type.Object({
  step: Type.Integer(),
  final: Type.Boolean({ description: 'The last reminder, the warning before the final action.' }),
  taken_at: timestamp,
  event_id: Type.String({ description: 'The `dunning.reminder` event this step emitted.' }),
});
export type DunningStep = Static<typeof stepSchema>;

export const caseWithStepsSchema = Type.Object({ ...caseProperties, steps: Type.Array(stepSchema) });
export type DunningCaseWithSteps = Static<typeof caseWithStepsSchema>;

/** An open case with what happens next: reminder step `next_step` (null when the final action is next). */
export const upcomingSchema = Type.Object({
  ...caseProperties,
  next_action: StringEnum(['reminder', 'final_action']),
  next_step: Nullable(Type.Integer()),
});
export type UpcomingCase = Static<typeof upcomingSchema>;

/**
 * One row of the past-due list. `dunning_case_id`: the open case; null once dunning is
 * exhausted (`unpaid`) or before any case. `overdue_since`: the latest case's opening, else
 * the period end; `days_overdue`: whole days from then to now.
 */
export const pastDueSchema = Type.Object({
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
});
export type PastDueSubscription = Static<typeof pastDueSchema>;
