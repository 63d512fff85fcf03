import { describe, expect, it } from "vitest";
import { AxConfigError } from "@ax/common";
import { Client } from "./client.js";
import type { ClientOptions } from "./client.js";

describe("Client options", () => {
  it("refuses an option it does not know before connecting, naming the one meant", () => {
    const make = (options: Record<string, unknown>) => () => new Client(options as ClientOptions);
    expect(make({ max_payload_bytes: 100 })).toThrow(AxConfigError);
    expect(make({ max_payload_bytes: 100 })).toThrow("Client options: max_payload_bytes: unknown option; did you mean maxPayloadBytes?");
    expect(make({ data_dir: "./x" })).toThrow("data_dir: unknown option; did you mean dataDir?");
    expect(make({ roles: ["worker"] })).toThrow(
      "Client options: roles: unknown option; the options here are storage, dataDir, redis, prefix, flows, maxPayloadBytes",
    );
  });
});
