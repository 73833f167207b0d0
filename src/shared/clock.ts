// The one source of "now" for every time-based rule, so tests move time instead of sleeping.

/** A clock answers the current instant; all domain code reads time through one of these. */
export interface Clock {
  /** The current instant. */
  now(): Date;
  /**
   * Set on a test clock's time (SPEC §11): the clock (`clock_…`) whose customers' objects are
   * being stamped. Events emitted with it carry `test_clock` in their data.
   */
  readonly testClockId?: string;
  /**
   * Set on a test clock's time: the real clock it stands in for. What happens in real time
   * whatever the clock reads (an event row written, SPEC §6) asks realClockOf.
   */
  readonly real?: Clock;
}

/** The real clock behind `clock`: `clock.real` on a test clock's time, else `clock` itself. */
export function realClockOf(clock: Clock): Clock {
  return clock.real ?? clock;
}

/** The real wall clock. */
export const systemClock: Clock = { now: () => new Date() };

/**
 * A clock tests set and move by hand. Starts at `start` (default: the real now) and
 * only moves when `advance(ms)` or `set(date)` is called.
 */
export class ManualClock implements Clock {
  #ms: number;

  constructor(start: Date = new Date()) {
    this.#ms = start.getTime();
  }

  now(): Date {
    return new Date(this.#ms);
  }

  /** Moves the clock forward by `ms` milliseconds. */
  advance(ms: number): void {
    this.#ms += ms;
  }

  /** Sets the clock to an absolute instant. */
  set(date: Date): void {
    this.#ms = date.getTime();
  }
}
