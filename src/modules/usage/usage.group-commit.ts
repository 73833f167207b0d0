// Group commit (SPEC §15 "Scale"): the work items of the requests in flight — here, the
// usage batches — run together in one `run` call (for ingestion: one read of their customers
// and meters, one transaction, one commit: one fsync on SQLite, one statement on PostgreSQL,
// one multi-row write per table for all of them), and each request gets its own answer only
// when that call has finished, so "durable once 202 is sent" holds as before.
//
// An item waits while `maxInFlight` groups are running (and, when fewer are, for the rest of
// the current turn of the event loop, so that requests read together run together); the
// next group takes every item waiting, up to `maxWeight`. A group that fails does not fail
// its neighbours: each of its items then runs again alone, and only an item that fails alone
// sees its error.

/** How a GroupCommit runs its groups. */
export interface GroupCommitOptions<T, R> {
  /**
   * Runs `items` together, all or nothing: one answer per item, in order. Must leave nothing
   * behind when it throws (the items are then run again one by one).
   */
  run: (items: T[]) => Promise<R[]>;
  /** Groups running at once (≥ 1). */
  maxInFlight: number;
  /** An item's weight (e.g. its events); a group holds at most `maxWeight`, or one item heavier than that. */
  weight: (item: T) => number;
  maxWeight: number;
}

/** Groups run so far and what they held (for tests and benches). */
export interface GroupCommitStats {
  groups: number;
  items: number;
  weight: number;
}

interface Waiting<T, R> {
  item: T;
  resolve: (answer: R) => void;
  reject: (error: unknown) => void;
}

/** Collects submitted items into groups run together (see the file comment). */
export class GroupCommit<T, R> {
  readonly #options: GroupCommitOptions<T, R>;
  #waiting: Waiting<T, R>[] = [];
  #inFlight = 0;
  #scheduled = false;
  readonly #stats: GroupCommitStats = { groups: 0, items: 0, weight: 0 };

  constructor(options: GroupCommitOptions<T, R>) {
    this.#options = options;
  }

  /** `item`'s answer, once the group it ran in has finished; what `run([item])` throws, if it fails alone. */
  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#pump();
    });
  }

  /** A copy of the counts so far. */
  stats(): GroupCommitStats {
    return { ...this.#stats };
  }

  #pump(): void {
    if (this.#scheduled || this.#inFlight >= this.#options.maxInFlight || this.#waiting.length === 0) return;
    this.#scheduled = true;
    // After the current turn's I/O callbacks: the requests read in it join this group.
    setImmediate(() => {
      this.#scheduled = false;
      void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    if (this.#inFlight >= this.#options.maxInFlight || this.#waiting.length === 0) return;
    const { weight, maxWeight } = this.#options;
    const group: Waiting<T, R>[] = [];
    let total = 0;
    while (this.#waiting.length > 0) {
      const next = weight(this.#waiting[0]!.item);
      if (group.length > 0 && total + next > maxWeight) break;
      group.push(this.#waiting.shift()!);
      total += next;
    }
    this.#stats.groups += 1;
    this.#stats.items += group.length;
    this.#stats.weight += total;
    this.#inFlight += 1;
    this.#pump();
    try {
      await this.#run(group);
    } finally {
      this.#inFlight -= 1;
      this.#pump();
    }
  }

  async #run(group: Waiting<T, R>[]): Promise<void> {
    const { run } = this.#options;
    let answers: R[];
    try {
      answers = await run(group.map((w) => w.item));
    } catch (error) {
      if (group.length === 1) {
        group[0]!.reject(error);
        return;
      }
      // Nothing of the group was kept: each item alone, so one item's error stays its own.
      for (const w of group) {
        await run([w.item]).then(([answer]) => w.resolve(answer!), w.reject);
      }
      return;
    }
    group.forEach((w, i) => w.resolve(answers[i]!));
  }
}
