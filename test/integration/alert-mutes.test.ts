import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AxAlertGroupNotFoundError, AxAlertMuteNotFoundError, ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { runAx } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";
import { startWebhookSink } from "../helpers/webhook-sink.js";

const failing = ax.task({ name: "mute_charge", alertGroup: "ops" }, (n: number) => {
  throw new Error(`card ${n} declined`);
});
const muteFlow = ax.flow({ name: "mute_flow" }, (n) => failing(n));
const otherTask = ax.task({ name: "mute_other", alertGroup: "ops" }, (n: number) => {
  throw new Error(`stock ${n} missing`);
});
const otherFlow = ax.flow({ name: "mute_other_flow" }, (n) => otherTask(n));

describe("alert mutes: an operator stops a group's alerts for a while", { timeout: 60_000 }, () => {
  const env = isolate("mutes");
  const dir = mkdtempSync(join(tmpdir(), "ax-mutes-"));
  let runtime: Runtime;
  let client: Client;
  let sink: Awaited<ReturnType<typeof startWebhookSink>>;
  const alertsOf = (flow: string) => sink.received.filter((r) => r.json.flow === flow && r.json.kind === "task_failed");
  const fail = async (flow: string, n: number) => {
    const run = await client.waitForRun(await client.triggerFlow(flow, n), { timeout: "20s" });
    expect(run.status).toBe("failed");
  };

  beforeAll(async () => {
    sink = await startWebhookSink();
    const file = join(dir, "runtime.yaml");
    writeFileSync(file, `alerts:\n  ops:\n    sinks: [{ type: webhook, url: "${sink.url}" }]\n    silence: 1h\n`);
    runtime = testRuntime(env, { flows: [muteFlow, otherFlow], config: file, roles: ["coordinator", "worker", "api"], port: 0 });
    await runtime.start();
    client = runtime.client();
  }, 30_000);

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await sink?.close();
    await env.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a flow's mute holds its alerts back and opens no silence window; the group's other flows still alert; unmuted, it alerts again", async () => {
    const mute = await client.muteAlerts({ group: "ops", flow: "mute_flow", for: "1h", reason: "card processor maintenance" });
    expect(mute).toMatchObject({ group: "ops", flow: "mute_flow", task: null, reason: "card processor maintenance" });
    expect(mute.createdBy).toMatch(/^cli:/);
    expect(mute.until.getTime() - Date.now()).toBeGreaterThan(3_590_000);

    await fail("mute_flow", 1);
    await fail("mute_other_flow", 1);
    await expect.poll(() => alertsOf("mute_other_flow").length, { timeout: 10_000 }).toBe(1);
    await sleep(1000);
    expect(alertsOf("mute_flow")).toHaveLength(0);

    expect((await client.listAlertMutes()).map((m) => m.id)).toEqual([mute.id]);
    expect(await client.unmuteAlerts(mute.id)).toMatchObject({ id: mute.id });
    expect(await client.listAlertMutes()).toEqual([]);
    expect((await client.listAlertMutes({ ended: true })).map((m) => m.id)).toContain(mute.id);
    // The muted failure claimed no silence window: the first failure after the mute alerts at once.
    await fail("mute_flow", 2);
    await expect.poll(() => alertsOf("mute_flow").length, { timeout: 10_000 }).toBe(1);
    expect(alertsOf("mute_flow")[0]!.json).toMatchObject({ suppressed: 0 });

    const audit = (await client.audit({ limit: 10 })).filter((e) => e.action.startsWith("alerts."));
    expect(audit.map((e) => [e.action, e.target])).toEqual([
      ["alerts.unmute", String(mute.id)],
      ["alerts.mute", String(mute.id)],
    ]);

    await expect(client.muteAlerts({ group: "pagers", for: "1h" })).rejects.toThrow(AxAlertGroupNotFoundError);
    await expect(client.muteAlerts({ group: "pagers", for: "1h" })).rejects.toThrow('alert group "pagers" is not defined (defined: ops)');
    await expect(client.unmuteAlerts(mute.id)).rejects.toThrow(AxAlertMuteNotFoundError);
    await expect(client.muteAlerts({ group: "ops", for: "40d" })).rejects.toThrow(/at most 30d/);
    await expect(client.muteAlerts({ group: "ops", for: "1h", reason: "nul\u0000" })).rejects.toThrow(/reason holds a NUL/);
  });

  it("ax alerts mute, mutes and unmute, and the same over HTTP", async () => {
    const connection = ["--storage", env.storage, "--prefix", env.prefix];
    const muted = await runAx([...connection, "alerts", "mute", "ops", "--for", "2h", "--task", "mute_other", "--reason", "known"]);
    expect(muted.stderr).toBe("");
    expect(muted.stdout).toMatch(/^mute (\d+) {2}group ops \(every flow, task mute_other\) {2}until \S+ {2}by cli:\S+ {2}"known"\n$/);
    const id = Number(/^mute (\d+)/.exec(muted.stdout)![1]);
    expect((await runAx([...connection, "alerts", "mutes"])).stdout).toContain(`mute ${id}  group ops`);
    const badFor = await runAx([...connection, "alerts", "mute", "ops", "--for", "soon"]);
    expect(badFor.code).toBe(1);
    expect(badFor.stderr).toContain("--for");
    const tooLong = await runAx([...connection, "alerts", "mute", "ops", "--for", "31d"]);
    expect(tooLong.code).toBe(1);
    expect(tooLong.stderr).toContain("ax alerts mute: --for: must be at most 30d");

    const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
      fetch(`${runtime.url}${path}`, {
        method: init.method ?? "GET",
        headers: init.body === undefined ? {} : { "content-type": "application/json" },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      });
    // A number is seconds, as every duration ax takes.
    const created = await api("/api/alerts/mutes", { method: "POST", body: { group: "ops", flow: "mute_flow", for: 600 } });
    expect(created.status).toBe(201);
    const mute = (await created.json()) as { id: number; until: string; createdBy: string };
    expect(Date.parse(mute.until) - Date.now()).toBeGreaterThan(590_000);
    expect(Date.parse(mute.until) - Date.now()).toBeLessThan(610_000);
    const listed = (await (await api("/api/alerts/mutes")).json()) as { mutes: { id: number }[] };
    expect(listed.mutes.map((m) => m.id).sort()).toEqual([id, mute.id].sort());
    expect((await api("/api/alerts/mutes", { method: "POST", body: { group: "pagers", for: "10m" } })).status).toBe(404);
    const tooShort = await api("/api/alerts/mutes", { method: "POST", body: { group: "ops", for: "0s" } });
    expect(tooShort.status).toBe(400);
    expect(await tooShort.text()).toContain("at least 1s");
    const nul = await api("/api/alerts/mutes", { method: "POST", body: { group: "ops", for: "1h", reason: "nul\u0000" } });
    expect(nul.status).toBe(400);
    expect((await api(`/api/alerts/mutes/${mute.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await api(`/api/alerts/mutes/${mute.id}`, { method: "DELETE" })).status).toBe(404);

    const unmuted = await runAx([...connection, "alerts", "unmute", String(id)]);
    expect(unmuted.stdout).toBe(
      `mute ${id} ended: alerts of group ops (every flow, task mute_other) are sent again, unless another mute covers them\n`,
    );
    expect((await runAx([...connection, "alerts", "mutes"])).stdout).toBe("no mutes in force\n");
    const ended = (await runAx([...connection, "alerts", "mutes", "--ended"])).stdout.split("\n").filter(Boolean);
    // The mute ended last comes first (the first test's mute ended before both), each marked as ended.
    expect(ended).toHaveLength(3);
    expect(ended[0]).toMatch(new RegExp(`^mute ${id} {2}group ops \\(every flow, task mute_other\\) {2}ended `));
    expect(ended[1]).toMatch(new RegExp(`^mute ${mute.id} {2}group ops \\(flow mute_flow\\) {2}ended `));

    // A misspelt flow or task would mute nothing: refused, naming what exists.
    const typo = await api("/api/alerts/mutes", { method: "POST", body: { group: "ops", flow: "mute_flwo", for: "10m" } });
    expect(typo.status).toBe(404);
    expect(await typo.json()).toMatchObject({
      error: "AxAlertMuteTargetError",
      message: expect.stringContaining("known: mute_flow, mute_other_flow"),
    });
    const typoTask = await runAx([...connection, "alerts", "mute", "ops", "--for", "1h", "--flow", "mute_flow", "--task", "mute_other"]);
    expect(typoTask.code).toBe(1);
    expect(typoTask.stderr).toContain('no task named "mute_other" is registered');
    expect(typoTask.stderr).toContain("(known: mute_charge)");
  });
});
