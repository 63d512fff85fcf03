import pg from "pg";

/** A LISTEN in place; `close` ends it. */
export interface Listening {
  close(): Promise<void>;
}

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5000;
const CONNECT_TIMEOUT_MS = 5000;

/**
 * LISTENs on `channel` over a dedicated connection (a pooled one would be handed to other work),
 * reconnecting with backoff when PostgreSQL goes away. Notifications sent while it is
 * disconnected are lost, so what they announce needs a safety net of its own. Resolves once the
 * first LISTEN is in place, or once the first try failed (the retries go on).
 */
export async function listenOnServer(
  url: string,
  channel: string,
  onNotify: (payload: string) => void,
  onError: (error: unknown) => void,
): Promise<Listening> {
  let client: pg.Client | undefined;
  let closed = false;
  let retryMs = RETRY_MIN_MS;
  let timer: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    let lost = false;
    const reconnect = (error: unknown) => {
      if (lost) return;
      lost = true;
      void next.end().catch(() => {});
      if (closed) return;
      onError(error);
      timer = setTimeout(() => void connect(), retryMs);
      retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
    };
    next.on("error", reconnect);
    next.on("end", () => reconnect(new Error(`the LISTEN connection for ${channel} ended`)));
    next.on("notification", (message) => {
      if (message.channel === channel && message.payload !== undefined) onNotify(message.payload);
    });
    try {
      await next.connect();
      await next.query(`listen "${channel}"`);
      if (closed) {
        await next.end().catch(() => {});
        return;
      }
      client = next;
      retryMs = RETRY_MIN_MS;
    } catch (error) {
      reconnect(error);
    }
  };

  await connect();
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      await client?.end().catch(() => {});
    },
  };
}
