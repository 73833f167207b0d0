// Who is acting (SPEC §16 "Every action is recorded with the session that did it"): the
// operator console runs each action inside withActor, and every event written while it runs
// (modules/events/events.service.ts) records that actor. The API, providers and the worker
// run outside any actor: their events carry none, as before.
import { AsyncLocalStorage } from 'node:async_hooks';

/** Who caused a change: an operator console session (`cs_…`). */
export interface Actor {
  type: 'console_session';
  id: string;
}

const current = new AsyncLocalStorage<Actor>();

/** Runs `action` with `actor` as the current actor (for everything it awaits); returns its result. */
export function withActor<T>(actor: Actor, action: () => Promise<T>): Promise<T> {
  return current.run(actor, action);
}

/** The actor of the running action, or undefined outside withActor. */
export function currentActor(): Actor | undefined {
  return current.getStore();
}
