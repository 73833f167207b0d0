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
  /** Requests the fakes hold unanswered whose call's deadline has not fired yet. */
  #unanswered = 0;
  /** Deadlines fired early whose request's connection is still open. */
  #firedOpen = 0;

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
    this.#unanswered += 1;
    void closed.then(() => {
      // Closed by a deadline fired here (counted already), or by the client's own real-time
      // deadline or the fake's shutdown: then it no longer waits for one.
      if (this.#firedOpen > 0) this.#firedOpen -= 1;
      else if (this.#unanswered > 0) this.#unanswered -= 1;
      this.#fireWhenStuck();
    });
    this.#fireWhenStuck();
  }

  /** Every open call is held unanswered by a fake: their deadlines fire now. */
  #fireWhenStuck(): void {
    if (this.#unanswered === 0 || this.#open.size !== this.#unanswered) return;
    this.#firedOpen += this.#unanswered;
    this.#unanswered = 0;
    const stuck = [...this.#open];
    this.#open.clear();
    for (const controller of stuck) controller.abort(new DOMException('timed out', 'TimeoutError'));
  }
}
