import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { ax, Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";

const echo = ax.task({ name: "api_echo" }, (value: unknown) => value);
const echoFlow = ax.flow({ name: "api_echo_flow" }, (input) => {
  echo(input);
});

describe("the HTTP API's 500 answers", () => {
  const env = isolate("apierrors");
  const lines: Record<string, unknown>[] = [];
  let api: Runtime;

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    api = new Runtime({
      storage: env.storage,
      redis: env.redis,
      prefix: env.prefix,
      flows: [echoFlow],
      roles: ["api"],
      port: 0,
      insecureNoAuth: true,
      logger: pino({ level: "error" }, sink),
    });
    await api.start();
  });

  afterAll(async () => {
    await api?.stop();
    await env.cleanup();
  });

  it("say only InternalError and a request id; the details, query included, go to the log under that id", async () => {
    // A real failure of our own: the table the trigger writes has gone.
    await env.sql("alter table runs rename to runs_gone");
    try {
      const response = await fetch(`${api.url}/api/flows/api_echo_flow/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ payload: { secret: "marker-3f9a" } }),
      });
      expect(response.status).toBe(500);
      const body = (await response.json()) as Record<string, string>;
      expect(Object.keys(body).sort()).toEqual(["error", "message", "requestId"]);
      expect(body.error).toBe("InternalError");
      expect(body.message).toContain(body.requestId);
      expect(JSON.stringify(body)).not.toMatch(/marker-3f9a|runs_gone|insert|select|relation/);
      const logged = lines.find((line) => line.reqId === body.requestId);
      expect(logged).toBeDefined();
      expect(JSON.stringify(logged)).toMatch(/relation .*runs.* does not exist/);
    } finally {
      await env.sql("alter table runs_gone rename to runs");
    }
  });
});
