// Row shape of `test_clocks` (SPEC §11). Written only by test-clocks.service.ts (the API),
// worker/test-clocks.jobs.ts (the advance) and billing/test-clocks.ts (the delete).
import type { Selectable } from 'kysely';

export const TEST_CLOCK_STATUSES = ['ready', 'advancing'] as const;
export type TestClockStatus = (typeof TEST_CLOCK_STATUSES)[number];

export interface TestClocksTable {
  id: string;
  name: string | null;
  /** What the API shows: the target of the advance in progress, else the clock's time. */
  frozen_time: string;
  /** The time the clock's objects have reached (= frozen_time when ready); an advance resumes here. */
  reached_time: string;
  status: TestClockStatus;
  /** The worker running the advance (a random token) and until when (real time) it holds it. */
  lease_token: string | null;
  lease_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export type TestClockRow = Selectable<TestClocksTable>;
