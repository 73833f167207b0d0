// Provider call deadlines for apps whose providers are the fakes (test/helpers/fake-*.ts): a
// request a fake holds without ever answering (a `timeout` or `lose` fault, a `hang` or `lost`
// override) fails as a timeout at once instead of after PROVIDER_TIMEOUT of real time. The
// fakes report each request they leave unanswered; once every call still open is one of those,
// nothing can answer them any more, so their deadlines fire, as the real ones would, only
// sooner. A call still waiting for an answer (in flight, held, slow) keeps them waiting: the
// order of outcomes is the real one. Each call also keeps its real-time deadline.
import type { CallDeadline, CallDeadlines } from '../../src/providers/provider-api.ts';

/** What a fake provider tells the deadlines about the requests it will never answer. */
export interface UnansweredRequests {
  /** A request the fake will never answer; `closed` resolves when its connection is gone. */
  unanswered(closed: Promise<void>): void;
}

/** The deadlines of one app's provider calls (or several apps' sharing the same fakes). */
export class FakeProviderDeadlines implements CallDeadlines, UnansweredRequests {
  /** Calls started and not ended: their deadlines' controllers. */
  readonly #open = new Set<AbortController>();
  /** Requests the fakes hold unanswered, still open, whose call's deadline has not fired yet. */
  readonly #unanswered = new Set<object>();

  start(timeoutMs: number): CallDeadline {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DOMException('timed out', 'TimeoutError')), timeoutMs);
    this.#open.add(controller);
    this.#fireWhenStuck();
    return {
      signal: controller.signal,
      end: () => {
        clearTimeout(timer);
        this.#open.delete(controller);
        this.#fireWhenStuck();
      },
    };
  }

  unanswered(closed: Promise<void>): void {
    const request = {};
    this.#unanswered.add(request);
    void closed.then(() => {
      // Gone (fired here, its call's own real-time deadline passed, or the fake shut down).
      this.#unanswered.delete(request);
      this.#fireWhenStuck();
    });
    this.#fireWhenStuck();
  }

  /** Every open call is held unanswered by a fake: their deadlines fire now. */
  #fireWhenStuck(): void {
    if (this.#unanswered.size === 0 || this.#open.size !== this.#unanswered.size) return;
    this.#unanswered.clear();
    const stuck = [...this.#open];
    this.#open.clear();
    for (const controller of stuck) controller.abort(new DOMException('timed out', 'TimeoutError'));
  }
}
