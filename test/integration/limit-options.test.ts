/**
 * Task limits as a running cluster takes them: `config.apply` and a Runtime's start-up file refuse
 * a configuration under which a task could never start, and a task's business key is the same
 * text as a flow's key (computed in SQL) for the same payload.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AxConfigError, ax, type Client, type Runtime } from "ax-scheduler";
import { latestConfigVersionNumber, openStore } from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { waitUntil } from "../helpers/limits.js";
import { AX_BIN, REPO_ROOT } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const FILE = "config/runtime.yaml";

let release: () => void = () => {};
let released = new Promise<void>((resolve) => {
  release = resolve;
});
/** Holds its key until the test releases every attempt at once. */
const hold = async (_payload: unknown) => {
  await released;
};

const wide = ax.task({ name: "lo_wide", pool: { name: "lo_db", slots: 5 } }, async (_payload: unknown) => 1);
const plain = ax.task({ name: "lo_plain" }, async (_payload: unknown) => 1);
const pooledFlow = ax.flow({ name: "lo_pooled" }, (payload) => {
  wide(payload);
  plain(payload);
});

type Keyed = { k?: unknown };
const flowHold = ax.task({ name: "lo_flow_hold" }, hold);
const pathHold = ax.task({ name: "lo_path_hold", concurrency: { max: 1, key: "k" } }, hold);
const functionHold = ax.task({ name: "lo_function_hold", concurrency: { max: 1, key: (p: Keyed) => p.k } }, hold);
const flowKeyed = ax.flow({ name: "lo_flow_key", concurrency: { max: 1, key: "k" } }, (payload) => {
  flowHold(payload);
});
const pathKeyed = ax.flow({ name: "lo_path_key" }, (payload) => {
  pathHold(payload);
});
const functionKeyed = ax.flow({ name: "lo_function_key" }, (payload) => {
  functionHold(payload);
});

describe("config.apply refuses a configuration under which a task could never start", () => {
  const env = isolate("limitcfg");
  let runtime: Runtime;
  let client: Client;
  let store: ReturnType<typeof openStore>;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [pooledFlow], roles: ["coordinator"] });
    await runtime.start();
    client = runtime.client();
    store = openStore({ url: env.storage });
  });

  afterAll(async () => {
    await store?.close();
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
  });

  async function refusal(text: string): Promise<AxConfigError> {
    const error = await client.config.apply(text, FILE, "qa").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error, text).toBeInstanceOf(AxConfigError);
    return error as AxConfigError;
  }

  it("refuses rates of 0, cancelling strategies without a key and pools smaller than a task's slots; nothing is stored", async () => {
    const before = await latestConfigVersionNumber(store.db);

    // lo_wide takes 5 slots of lo_db in its code.
    const tooSmall = await refusal("pools:\n  lo_db: 2\n");
    expect(tooSmall).toMatchObject({ file: FILE, line: 2, column: 3, key: "pools.lo_db" });
    expect(tooSmall.message).toBe(
      `${FILE}:2:3: pools.lo_db: task "lo_wide" takes 5 slots of pool "lo_db" (in its code) but the pool has 2, so it could never start; make pools.lo_db at least 5, or give the task at most 2 (tasks.lo_wide.pool: { name: lo_db, slots: 2 })`,
    );
    const yamlSlots = await refusal("pools: { lo_db: 5, small: 2 }\ntasks:\n  lo_plain: { pool: { name: small, slots: 3 } }\n");
    expect(yamlSlots.key).toBe("tasks.lo_plain.pool.slots");
    expect(yamlSlots.message).toMatch(/task "lo_plain" takes 3 slots of pool "small" but the pool has 2, so it could never start/);

    for (const per of ["0", "0.0004", "0ms"]) {
      const rate = await refusal(`pools: { lo_db: 5 }\ntasks:\n  lo_plain: { rate_limit: { max: 2, per: ${per} } }\n`);
      expect(rate.key).toBe("tasks.lo_plain.rate_limit.per");
      expect(rate.message).toMatch(/must be at least 1ms/);
    }
    const strategy = await refusal("pools: { lo_db: 5 }\ntasks:\n  lo_plain: { concurrency: { max: 1, strategy: cancel_newest } }\n");
    expect(strategy.key).toBe("tasks.lo_plain.concurrency.strategy");
    expect(strategy.message).toMatch(/"cancel_newest" needs a key/);

    expect(await latestConfigVersionNumber(store.db)).toBe(before);
  });

  it("accepts the pool once it is large enough, or once the YAML gives the task fewer slots", async () => {
    expect((await client.config.apply("pools: { lo_db: 5 }\n", FILE, "qa")).parsed).toMatchObject({ pools: { lo_db: 5 } });
    const fewer = await client.config.apply("pools: { lo_db: 2 }\ntasks:\n  lo_wide: { pool: { name: lo_db, slots: 2 } }\n", FILE, "qa");
    expect(fewer.parsed).toMatchObject({ pools: { lo_db: 2 } });
    expect(fewer.warnings).toEqual([]);
  });

  it("stores a version that leaves a code pool unsized, and warns that its tasks will not start", async () => {
    const empty = await client.config.apply("", FILE, "qa");
    expect(empty.warnings).toEqual([
      'pool "lo_db" is not sized here: task lo_wide takes it in code and will not start until a version sizes it (pools: { lo_db: <slots> })',
    ]);
    const dir = mkdtempSync(join(tmpdir(), "ax-limits-"));
    try {
      writeFileSync(join(dir, "runtime.yaml"), "# nothing yet\n");
      const args = [AX_BIN, "config", "apply", join(dir, "runtime.yaml"), "--storage", env.storage, "--prefix", env.prefix];
      const cli = await promisify(execFile)(process.execPath, args, { cwd: REPO_ROOT });
      expect(cli.stderr).toContain('warning: pool "lo_db" is not sized here: task lo_wide takes it in code');
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await client.config.apply("pools: { lo_db: 5 }\n", FILE, "qa");
    }
  });

  it("a Runtime whose start-up file sizes a pool below its code's slots does not start, and stores nothing", async () => {
    const fresh = isolate("limitcfgstart");
    const dir = mkdtempSync(join(tmpdir(), "ax-limits-"));
    const file = join(dir, "runtime.yaml");
    writeFileSync(file, "pools: { lo_db: 2 }\n");
    const starting = testRuntime(fresh, { flows: [pooledFlow], roles: ["coordinator"], config: file });
    const freshStore = openStore({ url: fresh.storage });
    try {
      await expect(starting.start()).rejects.toThrow(
        /pools\.lo_db: task "lo_wide" takes 5 slots of pool "lo_db" \(in its code\) but the pool has 2/,
      );
      expect(await latestConfigVersionNumber(freshStore.db)).toBe(0);
    } finally {
      await starting.stop({ timeout: 1 });
      await freshStore.close();
      rmSync(dir, { recursive: true, force: true });
      await fresh.cleanup();
    }
  });
});

describe("business keys: a task's key is the text a flow's key gives for the same payload", () => {
  const env = isolate("keytext");
  let runtime: Runtime;
  let client: Client;
  const runs: string[] = [];

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [flowKeyed, pathKeyed, functionKeyed], maxConcurrency: 100 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    release();
    await Promise.all(runs.map((id) => client.waitForRun(id, { timeout: "30s" }).catch(() => undefined)));
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
    released = new Promise<void>((resolve) => {
      release = resolve;
    });
  });

  /** The key a second run of `flow` with `payload` waits on, as its node's `waitingFor` names it. */
  async function keyOf(flow: string, payload: Keyed): Promise<string> {
    const pair = [await client.triggerFlow(flow, payload), await client.triggerFlow(flow, payload)];
    runs.push(...pair);
    let key: string | undefined;
    await waitUntil(async () => {
      for (const id of pair) {
        const waiting = (await client.getRun(id)).tasks[0]?.waitingFor;
        const found = waiting && /^concurrency key ([\s\S]*) \(1\/1\)$/.exec(waiting);
        if (found) key = found[1];
      }
      return key !== undefined;
    }, 20_000);
    return key!;
  }

  it("for strings, numbers, booleans, null, a missing value, objects and arrays", async () => {
    const values: [string, Keyed][] = [
      ["string", { k: "o42" }],
      ["empty string", { k: "" }],
      ["number", { k: 42 }],
      ["fraction", { k: -0.5 }],
      ["large number", { k: 1e21 }],
      ["small number", { k: 1.5e-7 }],
      ["boolean", { k: true }],
      ["null", { k: null }],
      ["missing", {}],
      ["object", { k: { b: 1, a: [1, "x"], aa: null, é: 'ü\n"q"' } }],
      ["other object", { k: { b: 2 } }],
      ["array", { k: [1, { c: 2, b: [true] }] }],
    ];
    const keys = await Promise.all(
      values.map(async ([label, payload]) => {
        const [flow, path, fn] = await Promise.all([
          keyOf("lo_flow_key", payload),
          keyOf("lo_path_key", payload),
          keyOf("lo_function_key", payload),
        ]);
        return { label, flow, path, fn };
      }),
    );
    for (const { label, flow, path, fn } of keys) expect({ label, path, fn }).toEqual({ label, path: flow, fn: flow });
    const byLabel = Object.fromEntries(keys.map((k) => [k.label, k.flow]));
    expect(byLabel).toMatchObject({
      missing: "null",
      null: "null",
      "large number": "1000000000000000000000",
      "small number": "0.00000015",
    });
    expect(byLabel.object).toBe('{"a": [1, "x"], "b": 1, "aa": null, "é": "ü\\n\\"q\\""}');
    expect(byLabel["other object"]).not.toBe(byLabel.object);
  });
});
