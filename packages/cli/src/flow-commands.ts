import type { Command } from "commander";
import type { RunsApi } from "./runs-api.js";

type WithClient = (fn: (client: RunsApi) => Promise<void>) => Promise<void>;

/** `ax flow retire <flow>`; it also reaches an `ax dev`'s embedded history through its API. */
export function addFlowCommands(program: Command, withClient: WithClient): void {
  const flow = program.command("flow").description("a flow's lifecycle in the cluster");
  flow
    .command("retire <flow>")
    .description(
      "take a flow whose code is gone out of use: no longer listed, triggered, scheduled or named in config; its runs stay readable (a Runtime defining it again brings it back)",
    )
    .action(async (name: string) => {
      await withClient(async (client) => {
        const retired = await client.retireFlow(name);
        const when = retired.retiredAt.toISOString();
        console.log(retired.changed ? `flow ${retired.flow} retired at ${when}` : `flow ${retired.flow} was retired already (at ${when})`);
        if (retired.tasks.length > 0)
          console.log(`  its tasks no other flow runs, which runtime.yaml may no longer name: ${retired.tasks.join(", ")}`);
      });
    });
}
