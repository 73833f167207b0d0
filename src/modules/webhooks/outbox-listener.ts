// PostgreSQL only: LISTEN for the outbox doorbell (events/events.outbox-signal.ts) on one dedicated
// connection per worker process, so a worker hears about events committed by any process at
// once. Reconnects after errors; while it is down the worker's poll carries on alone.
import pg from 'pg';
import { outboxChannel } from '../events/events.outbox-signal.ts';

export interface OutboxListenerOptions {
  /** The postgres:// URL of DATABASE_URL. */
  url: string;
  /** The schema whose outbox to hear (deps.database.schema). */
  schema: string;
  /** Called on every notification, and after each (re)connect to catch up. */
  onRing: () => void;
  /** Wait before reconnecting (ms). */
  retryMs: number;
  log: { error(object: object, message: string): void };
}

export class OutboxListener {
  readonly #options: OutboxListenerOptions;
  #client: pg.Client | undefined;
  #retry: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: OutboxListenerOptions) {
    this.#options = options;
  }

  /** Connects and listens (in the background). */
  start(): void {
    void this.#connect();
  }

  /** Stops listening and closes the connection. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  async #connect(): Promise<void> {
    if (this.#stopped) return;
    const client = new pg.Client({ connectionString: this.#options.url });
    client.on('notification', () => this.#options.onRing());
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(outboxChannel(this.#options.schema))}`);
      if (this.#stopped) {
        await client.end();
        return;
      }
      this.#client = client;
      this.#options.onRing(); // anything committed while not listening
    } catch (error) {
      this.#lost(client, error);
    }
  }

  #lost(client: pg.Client, error?: unknown): void {
    if (error !== undefined) this.#options.log.error({ err: error }, 'outbox listener lost its connection');
    if (this.#client === client) this.#client = undefined;
    client.end().catch(() => {});
    if (this.#stopped || this.#retry) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      void this.#connect();
    }, this.#options.retryMs);
  }
}
