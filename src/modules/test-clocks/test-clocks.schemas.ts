// The test clock resource and its request bodies (SPEC §11): TypeBox schemas that validate,
// serialize and document the routes.
import Type, { type Static } from 'typebox';
import { Nullable, pageOf, StringEnum, timestamp, timestampInput } from '../../http/schemas.ts';
import { TEST_CLOCK_STATUSES } from '../../db/tables/test-clocks.table.ts';

export const TEST_CLOCK_SORT_FIELDS = ['created_at', 'frozen_time'] as const;

export const testClockSchema = Type.Object(
  {
    id: Type.String({ examples: ['clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    name: Nullable(Type.String()),
    frozen_time: Type.String({
      format: 'date-time',
      description: "The clock's time: its customers' objects live at this instant (while advancing: the target).",
    }),
    status: StringEnum(TEST_CLOCK_STATUSES, {
      description: '`advancing` while the worker runs the due work up to `frozen_time`, then `ready`.',
    }),
    created_at: timestamp,
  },
  {
    $id: 'TestClock',
    description:
      'A clock of its own for the customers attached to it (TEST_CLOCKS=true): advance it to run, in due-time order, every renewal, past-due, dunning step and period-end change that real time would (SPEC §11).',
    examples: [
      {
        id: 'clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        name: 'annual renewal',
        frozen_time: '2026-01-15T10:00:00.000Z',
        status: 'ready',
        created_at: '2026-01-15T10:00:00.000Z',
      },
    ],
  },
);

export const testClockListSchema = pageOf('TestClockList', testClockSchema);

/** A test clock as the API returns it. */
export type TestClock = Static<typeof testClockSchema>;

export const createTestClockBody = Type.Object(
  {
    frozen_time: timestampInput,
    name: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 255 }))),
  },
  { additionalProperties: false, examples: [{ frozen_time: '2026-01-15T10:00:00.000Z', name: 'annual renewal' }] },
);

export const advanceTestClockBody = Type.Object(
  { frozen_time: timestampInput },
  {
    additionalProperties: false,
    description: 'The new time: later than the current one, at most 2 years ahead of it.',
    examples: [{ frozen_time: '2026-04-15T10:00:00.000Z' }],
  },
);

export type CreateTestClockInput = Static<typeof createTestClockBody>;
export type AdvanceTestClockInput = Static<typeof advanceTestClockBody>;
