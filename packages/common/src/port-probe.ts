import { createServer } from "node:net";
import { portError } from "./errors/config.js";

/**
 * Fails with AxPortInUseError when `port` on `host` is taken, by listening on it for a moment.
 * A start checks its ports this way before it writes anything the cluster sees (a config file it
 * stores, its flows), so a process that cannot listen leaves the cluster as it found it. Port 0
 * (any free one) cannot be taken.
 */
export async function assertPortFree(port: number, host: string, what: string, choice?: string): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once("error", reject);
      probe.listen({ port, host, exclusive: true }, resolve);
    });
  } catch (error) {
    throw portError(error, port, host, what, choice);
  } finally {
    if (probe.listening) await new Promise((resolve) => probe.close(resolve));
  }
}
