import type { Command } from "commander";
import type { Client } from "ax-scheduler";

type WithClient = (fn: (client: Client) => Promise<void>) => Promise<void>;

/** `ax alerts test <group>`: one test alert through the group's sinks, to check URLs and secrets before a real failure does. */
export function addAlertsCommands(program: Command, withClient: WithClient): void {
  const alerts = program.command("alerts").description("alert groups of runtime.yaml (alerts:)");

  alerts
    .command("test <group>")
    .description("send a test alert through every sink of the group (of the newest stored config version, or --config)")
    .option("--config <file>", "read the groups from this runtime.yaml instead of the stored version")
    .action(async (group: string, raw: { config?: string }) => {
      const [{ default: pino }, { parseRuntimeConfig, readConfigFile, sendTestAlert }] = await Promise.all([
        import("pino"),
        import("ax-scheduler"),
      ]);
      // The log sink writes here, on stdout, where the user is looking.
      const log = pino({ level: "info" });
      const deliver = async (yaml: string, file: string) => {
        const results = await sendTestAlert(parseRuntimeConfig(yaml, file), group, log);
        for (const r of results) console.log(`${r.ok ? "sent  " : "FAILED"} ${r.sink} ${r.target}${r.error ? `: ${r.error}` : ""}`);
        if (results.some((r) => !r.ok)) process.exitCode = 1;
      };
      if (raw.config) {
        await deliver(readConfigFile(raw.config), raw.config);
        return;
      }
      await withClient(async (client) => {
        const current = await client.config.current();
        await deliver(current?.yaml ?? "", current ? `${current.file} (config v${current.version})` : "(no stored config)");
      });
    });
}
