import type { FlowCaps } from "./flow-caps.js";
import type { Logger } from "pino";

type KeyOption = "idempotencyKey" | "businessKey";

/**
 * A flow triggered by name, without its code, whose Runtimes recorded that it computes its
 * idempotency or business key in code: these runs carry no such key, so a repeated event makes
 * a second run. Said once per flow and client (or API process), after a trigger that made its
 * run, since nothing fails: to the given logger (the `ax` command's plain lines, `ax server`'s
 * log), else as a process warning (stderr).
 */
export class UnkeyedWarning {
  private readonly warned = new Set<string>();

  constructor(
    private readonly caps: FlowCaps,
    private readonly log?: Logger,
    /** Who lacks the code, and how its caller gets the keys applied. */
    private readonly lacking: { who: string; remedy: (missing: KeyOption[]) => string } = CLIENT_LACKING,
  ) {}

  async check(flow: string, given: Record<KeyOption, unknown>): Promise<void> {
    if (this.warned.has(flow)) return;
    const computed = (await this.caps.settings(flow).catch(() => undefined))?.keyFunctions ?? [];
    const missing = computed.filter((option) => (option === "idempotencyKey" || option === "businessKey") && given[option] === undefined);
    if (missing.length === 0) return;
    this.warned.add(flow);
    // Only a missing idempotency key lets a repeated event make a second run; a business key is for finding runs.
    const consequence = missing.includes("idempotencyKey") ? "a repeated event makes a second run" : "its runs cannot be found by that key";
    const message =
      `flow "${flow}" computes its ${missing.join(" and ")} in code, which ${this.lacking.who} does not have: its runs are triggered without ${missing.length > 1 ? "them" : "it"}` +
      ` (${consequence}). ${this.lacking.remedy(missing as KeyOption[])}`;
    if (this.log) this.log.warn({ code: "AX_FLOW_KEYS_NOT_APPLIED" }, message);
    else process.emitWarning(message, { type: "AxWarning", code: "AX_FLOW_KEYS_NOT_APPLIED" });
  }
}

const flagOf = (option: KeyOption) => option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** A Client (or `ax trigger`) that triggers a flow by name. */
const CLIENT_LACKING = {
  who: "this client",
  remedy: (missing: KeyOption[]) =>
    "Trigger with the flow itself (triggerFlow(flowObject, payload)), give new Client({ flows }), or pass the key;" +
    ` from the CLI, ax trigger --entry <file> or --${missing.map(flagOf).join(" / --")}.`,
};

/** An API process started without the flows' code (`ax server` without an entry). */
export const SERVER_LACKING = {
  who: "this API process",
  remedy: (missing: KeyOption[]) =>
    `Start ax server with the entry file that defines the flow (ax server <entry>), or send ${missing.join(" / ")} in the request body.`,
};
