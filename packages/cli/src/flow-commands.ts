import type { Command } from "commander";
import type { FlowState } from "ax-scheduler";
import { table } from "./render-queues.js";
import type { RunsApi } from "./runs-api.js";

type WithClient = (fn: (client: RunsApi) => Promise<void>) => Promise<void>;

/** `ax flows` as a table; a flow no live process defines says it may be retired once its runs are done. */
export function renderFlows(flows: FlowState[]): string {
  return table(
    ["FLOW", "VERSION", "NODES", "DEFINED BY", "LAST RUN", "UNFINISHED", "STATE"],
    flows.map((f) => [
      f.name,
      `v${f.version}`,
      String(f.nodes),
      f.definedBy === 0 ? "no live process" : `${f.definedBy} process${f.definedBy === 1 ? "" : "es"}`,
      f.lastRunAt?.toISOString() ?? "never",
      String(f.unfinishedRuns),
      f.retiredAt
        ? `retired ${f.retiredAt.toISOString()}`
        : f.definedBy === 0
          ? `in use; no code defines it now (ax flow retire ${f.name}${f.unfinishedRuns > 0 ? " once its runs are done" : ""})`
          : "in use",
    ]),
  );
}

/** `ax flows` and `ax flow retire <flow>`; they also reach an `ax dev`'s embedded history through its API. */
export function addFlowCommands(program: Command, withClient: WithClient): void {
  program
    .command("flows")
    .description("list the flows in use: version, live processes defining it, newest run, unfinished runs")
    .option("--retired", "list the retired flows too")
    .option("--json", "print them as JSON")
    .action(async (raw: { retired?: boolean; json?: boolean }) => {
      await withClient(async (client) => {
        const flows = await client.listFlows({ retired: raw.retired === true });
        if (raw.json) console.log(JSON.stringify(flows, null, 2));
        else if (flows.length === 0) console.error("no flows (a flow is registered when a process whose code defines it starts)");
        else console.log(renderFlows(flows));
      });
    });

  const flow = program.command("flow").description("a flow's lifecycle in the cluster");
  flow
    .command("retire <flow>")
    .description(
      "take a flow whose code is gone out of use: no longer listed, triggered, scheduled or named in config; its runs stay readable (a Runtime defining it again brings it back)",
    )
    .option("--json", "print the answer as JSON")
    .action(async (name: string, raw: { json?: boolean }) => {
      await withClient(async (client) => {
        const retired = await client.retireFlow(name);
        if (raw.json) return console.log(JSON.stringify(retired, null, 2));
        const when = retired.retiredAt.toISOString();
        console.log(retired.changed ? `flow ${retired.flow} retired at ${when}` : `flow ${retired.flow} was retired already (at ${when})`);
        if (retired.tasks.length > 0)
          console.log(`  its tasks no other flow runs, which runtime.yaml may no longer name: ${retired.tasks.join(", ")}`);
      });
    });
}
