import { describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { AxConfigError, AxNoEmbeddedHistoryError } from "@ax/common";
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

  it("refuses an embedded data directory that does not exist, and creates nothing", () => {
    const dataDir = join(tmpdir(), `ax-no-history-${process.pid}-${Date.now()}`);
    expect(() => new Client({ dataDir })).toThrow(AxNoEmbeddedHistoryError);
    expect(() => new Client({ dataDir })).toThrow(`no embedded history in ${dataDir} (the directory does not exist; nothing was created)`);
    expect(existsSync(dataDir)).toBe(false);
  });
});
