import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { DEFAULT_METRICS_HOST, METRICS_LISTENER, portError } from "@ax/common";
import { addProcessMetrics } from "./process-metrics.js";
import { checkReadiness, type ReadinessDeps } from "./readiness.js";

export { checkReadiness, READINESS_TIMEOUT_MS, type Readiness, type ReadinessDeps } from "./readiness.js";

/**
 * A bare /metrics endpoint for processes without the API role (workers, coordinators), so
 * Prometheus can scrape each, /healthz for liveness probes (the process answers, as the API's does)
 * and /readyz for readiness probes (PostgreSQL and Redis answer: 200, else 503 naming the failure).
 * Given no `readiness` connections, /readyz answers as /healthz does.
 *
 * `host` defaults to 0.0.0.0 (every interface, for a scraper on another machine): no route here
 * needs a token, keep the port off public networks (docs/security.md).
 */
export async function startMetricsServer(
  registry: Registry,
  port: number,
  host = DEFAULT_METRICS_HOST,
  readiness?: ReadinessDeps,
): Promise<{ url: string; close(): Promise<void> }> {
  addProcessMetrics(registry);
  const server = createServer((request, response) => {
    const path = request.url?.split("?")[0];
    if (path === "/healthz" || (path === "/readyz" && !readiness)) {
      response.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
      return;
    }
    if (path === "/readyz" && readiness) {
      void checkReadiness(readiness).then((ready) =>
        response.writeHead(ready.ok ? 200 : 503, { "content-type": "application/json" }).end(JSON.stringify(ready)),
      );
      return;
    }
    if (path !== "/metrics") {
      response.writeHead(404).end("only /metrics, /healthz and /readyz here\n");
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { "content-type": registry.contentType }).end(text),
      (error: Error) => response.writeHead(500).end(error.message),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) => reject(portError(error, port, host, METRICS_LISTENER.what, METRICS_LISTENER.choice)));
    server.listen(port, host, resolve);
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host}:${address.port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
