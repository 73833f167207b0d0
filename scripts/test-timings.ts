// A test reporter for scripts/test.ts: how long each test file took (the sum of its top-level
// tests' durations), so that the next run can start the slowest files first.
import { relative } from 'node:path';
import type { TestEvent } from 'node:test/reporters';

/**
 * Yields once, after the last event: a JSON object of milliseconds by test file path (relative
 * to the working directory), for the files whose tests reported.
 */
export default async function* testTimings(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const durations: Record<string, number> = {};
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    if (event.data.nesting !== 0 || !event.data.file) continue;
    const file = relative(process.cwd(), event.data.file);
    if (file === 'scripts/test-cpu.ts') continue; // TEST_CPU_REPORT's marks, not a test file
    durations[file] = (durations[file] ?? 0) + event.data.details.duration_ms;
  }
  yield JSON.stringify(durations);
}
