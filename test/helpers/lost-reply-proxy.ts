import { createServer, connect, type AddressInfo, type Socket } from "node:net";

/** PostgreSQL's ReadyForQuery message ('Z', length 5): the statement before it is committed. */
const READY_FOR_QUERY = Buffer.from([0x5a, 0, 0, 0, 5]);

/** A TCP proxy to PostgreSQL that loses the reply to chosen statements after they commit. */
export interface LostReplyProxy {
  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string;
  /** Replies lost so far. */
  readonly dropped: number;
  close(): Promise<void>;
}

/**
 * The first `times` statements whose text contains `marker` reach PostgreSQL and commit, but
 * their client's connection is cut before the answer arrives: the client sees "Connection
 * terminated unexpectedly" for a write that did happen.
 */
export async function lostReplyProxy(target: string, marker: string, times = 1): Promise<LostReplyProxy> {
  const { hostname, port } = new URL(target);
  let remaining = times;
  let dropped = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(port || 5432), hostname);
    sockets.add(client).add(upstream);
    let armed = false;
    let tail = "";
    let held = Buffer.alloc(0);
    client.on("data", (chunk) => {
      const text = tail + chunk.toString("latin1");
      tail = text.slice(-marker.length);
      if (!armed && remaining > 0 && text.includes(marker)) {
        armed = true;
        remaining -= 1;
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (!armed) {
        client.write(chunk);
        return;
      }
      held = Buffer.concat([held, chunk]);
      if (held.includes(READY_FOR_QUERY)) {
        dropped += 1;
        client.destroy();
        upstream.destroy();
      }
    });
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      a.on("error", () => b.destroy());
      a.on("close", () => {
        sockets.delete(a);
        b.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const proxyPort = (server.address() as AddressInfo).port;
  return {
    via(url) {
      const parsed = new URL(url);
      parsed.hostname = "127.0.0.1";
      parsed.port = String(proxyPort);
      return parsed.toString();
    },
    get dropped() {
      return dropped;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
