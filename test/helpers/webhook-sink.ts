import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  path: string;
  body: string;
  json: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

/** A local HTTP endpoint that records every POST (alert webhooks), answering `status()` (200 unless set). */
export async function startWebhookSink(): Promise<{
  url: string;
  received: Received[];
  /** Every request, answered 200 or not. */
  hits(): number;
  setStatus(code: number): void;
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  let status = 200;
  let hits = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      hits++;
      if (status === 200)
        received.push({ path: req.url ?? "", body, json: JSON.parse(body) as Record<string, unknown>, headers: req.headers });
      res.statusCode = status;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    hits: () => hits,
    setStatus: (code) => {
      status = code;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Whether `X-Ax-Signature` is the HMAC-SHA256 of the body under `secret`, compared in constant time. */
export function validSignature(r: Received, secret: string): boolean {
  const header = r.headers["x-ax-signature"];
  if (typeof header !== "string" || !header.startsWith("sha256=")) return false;
  const expected = createHmac("sha256", secret).update(r.body).digest();
  const given = Buffer.from(header.slice("sha256=".length), "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}
