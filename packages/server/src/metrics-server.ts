import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { portError } from "@ax/common";

/**
 * A bare /metrics endpoint for processes without the API role (workers, coordinators), so
 * Prometheus can scrape each, and /healthz for container probes (the process answers, as the API's does).
 */
export async function startMetricsServer(
  registry: Registry,
  port: number,
  host = "0.0.0.0",
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    if (request.url === "/healthz") {
      response.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
      return;
    }
    if (request.url !== "/metrics") {
      response.writeHead(404).end("only /metrics and /healthz here\n");
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { "content-type": registry.contentType }).end(text),
      (error: Error) => response.writeHead(500).end(error.message),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) => reject(portError(error, port, host, "the metrics endpoint")));
    server.listen(port, host, resolve);
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host}:${address.port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
