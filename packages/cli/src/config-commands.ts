import type { Command } from "commander";
import { z } from "zod";
import type { Client, ConfigApplied, ConfigVersionInfo, EffectiveOption } from "ax-scheduler";
import { AxUsageError } from "./errors.js";
import { parseFlags, positiveInt } from "./options.js";
import { localConfigAuthor, yamlValue } from "@ax/common";

/**
 * What the config commands need: a Client's `config` on the storage, or the HTTP API of the
 * `ax dev` holding an embedded data directory (every method here has a route there).
 */
export type ConfigApi = Pick<
  Client["config"],
  "apply" | "check" | "rollback" | "current" | "history" | "diff" | "cluster" | "effective" | "testAlert"
>;

type WithConfig = (fn: (api: ConfigApi) => Promise<void>) => Promise<void>;

function shownValue(o: EffectiveOption, block: EffectiveOption[]): string {
  // A `concurrency` or `rate_limit` with a key counts per key: its task-wide row is empty, and it is not unset.
  const perKey = block.find((other) => other.option === `${o.option}_key` && other.value !== null);
  if (o.value === null && perKey) return `(per key: ${perKey.option})`;
  // "null" would read as a value to write; runtime.yaml refuses it for most options.
  if (o.value === null) return "(not set)";
  if (typeof o.value === "object" && Object.keys(o.value).length === 0) return "(none)";
  return yamlValue(o.option, o.value);
}

/** A heading (`cluster`, `task send_mail`) and its options. */
type Block = [string, EffectiveOption[]];

/** Every block's option, value and source in columns as wide as the widest of all blocks. */
function table(blocks: Block[]): string {
  const all = blocks.flatMap(([, options]) => options.map((o) => ({ o, shown: shownValue(o, options) })));
  const [name, value] = [Math.max(0, ...all.map(({ o }) => o.option.length)), Math.max(0, ...all.map(({ shown }) => shown.length))];
  return blocks
    .map(([title, options]) =>
      [title, ...options.map((o) => `  ${o.option.padEnd(name)}  ${shownValue(o, options).padEnd(value)}  ${o.source}`)].join("\n"),
    )
    .join("\n");
}

function stored(v: ConfigVersionInfo): string {
  return `config v${v.version} stored from ${v.file} by ${v.author} at ${v.createdAt}`;
}

/** What apply, edit and rollback print: the version stored and its diff (or `unchanged`), then warnings on stderr. */
function printApplied(version: ConfigApplied, unchanged: string, storedNote = ""): void {
  if (version.unchanged) console.log(unchanged);
  else {
    console.log(`${stored(version)}${storedNote}; running processes apply it within seconds`);
    console.log(version.diff);
  }
  for (const warning of version.warnings) console.warn(`warning: ${warning}`);
}

function versionArg(command: string, text: string): number {
  const parsed = positiveInt.safeParse(text);
  if (!parsed.success)
    throw new AxUsageError(`ax config ${command}: "${text}" is not a version number; list versions with \`ax config history\``);
  return parsed.data;
}

/** `ax config apply|edit|check|show|history|diff|rollback`: stored `runtime.yaml` versions every Runtime follows live. */
export function addConfigCommands(program: Command, withConfig: WithConfig): void {
  const config = program
    .command("config")
    .description("runtime.yaml versions stored in PostgreSQL; every running process applies a new one within seconds");

  config
    .command("apply <file>")
    .description("validate the file against the cluster's flows, store it as a new version and have every process apply it")
    .option("--author <name>", "who made the change (default: user@host)")
    .action(async (file: string, raw: { author?: string }) => {
      const { readConfigFile } = await import("ax-scheduler");
      const text = readConfigFile(file);
      await withConfig(async (api) => {
        const version = await api.apply(text, file, raw.author ?? localConfigAuthor());
        printApplied(version, `unchanged: ${file} is config v${version.version}, in force; nothing stored`);
      });
    });

  config
    .command("edit")
    .description(
      "open the version in force in $VISUAL or $EDITOR (secrets masked, comments not shown), then store the edit on it, keeping the file's comments and the masked values left as shown",
    )
    .option("--author <name>", "who made the change (default: user@host)")
    .action(async (raw: { author?: string }) => {
      const { editConfig } = await import("./config-edit.js");
      await withConfig(async (api) => {
        const version = await editConfig(api, raw.author ?? localConfigAuthor());
        if (!version) console.log("no change: nothing stored");
        else printApplied(version, `unchanged: the edit leaves config v${version.version} as it is; nothing stored`);
      });
    });

  config
    .command("check <file>")
    .description(
      "what apply would do, storing nothing: refuses what apply refuses, else the diff from the version in force and the warnings",
    )
    .action(async (file: string) => {
      const { readConfigFile } = await import("ax-scheduler");
      const text = readConfigFile(file);
      await withConfig(async (api) => {
        const checked = await api.check(text, file);
        if (checked.unchanged) console.log(`unchanged: ${file} is config v${checked.inForce}, in force; apply would store nothing`);
        else {
          const next = (checked.inForce ?? 0) + 1;
          console.log(`valid: apply would store ${file} as config v${next} (the next version number, if none is stored meanwhile)`);
          console.log(checked.diff);
        }
        for (const warning of checked.warnings) console.warn(`warning: ${warning}`);
      });
    });

  config
    .command("show")
    .description("the effective value of every option and its source (yaml vN, code, default)")
    .option("--task <name>", "only this task")
    .option("--flow <name>", "only this flow")
    .option("--cluster", "each process (workers, coordinators, API) and the config version it runs")
    .option("--json", "print as JSON")
    .action(async (raw: { task?: string; flow?: string; cluster?: boolean; json?: boolean }) => {
      await withConfig(async (api) => {
        if (raw.cluster) {
          const [processes, current] = await Promise.all([api.cluster(), api.current()]);
          if (raw.json) {
            console.log(JSON.stringify({ version: current?.version ?? null, processes }, null, 2));
            return;
          }
          console.log(current ? `newest stored version: v${current.version}` : "no config version stored");
          for (const p of processes) {
            const behind = current && p.configVersion !== current.version && p.live ? "  BEHIND" : "";
            console.log(
              [
                p.id,
                `pid ${p.pid}`,
                ...(p.roles.includes("worker") ? [`queues ${p.queues.join(",")}`] : []),
                p.configVersion === null ? "no version" : `v${p.configVersion}`,
                p.live ? "live" : `silent since ${p.heartbeatAt.toISOString()}`,
                `roles ${p.roles.join(",")}`,
              ].join("  ") + behind,
            );
          }
          if (processes.length === 0) console.log("no ax processes");
          return;
        }
        const shown = await api.effective({ task: raw.task, flow: raw.flow });
        if (raw.json) {
          console.log(JSON.stringify(shown, null, 2));
          return;
        }
        console.log(shown.version === null ? "no stored config version: code and defaults only" : `config v${shown.version} in force`);
        const blocks: Block[] = [
          ...(raw.task === undefined && raw.flow === undefined ? [["cluster", shown.cluster] as Block] : []),
          ...Object.entries(shown.tasks).map(([name, options]): Block => [`task ${name}`, options]),
          ...Object.entries(shown.flows).map(([name, options]): Block => [`flow ${name}`, options]),
        ];
        if (blocks.length > 0) console.log(table(blocks));
      });
    });

  config
    .command("history")
    .description("stored versions, newest first: author, time, file and lines changed")
    .option("--limit <n>", "how many", "20")
    .option("--json", "print as JSON")
    .action(async (raw: { limit: string; json?: boolean }) => {
      const { limit } = parseFlags(z.object({ limit: positiveInt }), raw, "config history");
      await withConfig(async (api) => {
        const history = await api.history(limit);
        if (raw.json) console.log(JSON.stringify(history, null, 2));
        else if (history.length === 0) console.log("no config version stored; store one with `ax config apply <file>`");
        else for (const h of history) console.log(`v${h.version}  ${h.createdAt}  ${h.author}  ${h.file}  +${h.added} -${h.removed}`);
      });
    });

  config
    .command("diff <a> <b>")
    .description("unified diff from version a to version b")
    .action(async (a: string, b: string) => {
      const from = versionArg("diff", a);
      const to = versionArg("diff", b);
      await withConfig(async (api) => {
        console.log(await api.diff(from, to));
      });
    });

  config
    .command("rollback <version>")
    .description("store a new version whose text is that version's; every process applies it")
    .option("--author <name>", "who made the change (default: user@host)")
    .action(async (version: string, raw: { author?: string }) => {
      const v = versionArg("rollback", version);
      await withConfig(async (api) => {
        const rolled = await api.rollback(v, raw.author ?? localConfigAuthor());
        printApplied(
          rolled,
          `unchanged: config v${rolled.version}, in force, has the text of v${v}; nothing stored`,
          ` (the text of v${v})`,
        );
      });
    });
}
