import type { Command } from "commander";
import { z } from "zod";
import { TOKEN_NAME, TOKEN_NAME_RULE, TOKEN_SCOPES } from "@ax/common";
import type { Client } from "ax-scheduler";
import { durationFlagAtLeast, parseFlags } from "./options.js";

/**
 * What `ax token` needs: a `Client`'s tokens on the storage, or the HTTP API of the process holding
 * an embedded data directory (`/api/tokens`).
 */
export type TokenApi = Pick<Client["tokens"], "create" | "list" | "revoke">;

type WithTokenApi = (fn: (tokens: TokenApi) => Promise<void>) => Promise<void>;

const iso = (date: Date | null) => (date ? date.toISOString() : "-");

/**
 * `ax token create|list|revoke`: on the storage, recorded as `cli:<os user>`, or through the API of
 * the process holding an embedded data directory, recorded as that API records its callers.
 */
export function addTokenCommands(program: Command, withTokenApi: WithTokenApi): void {
  const token = program.command("token").description("API tokens (Authorization: Bearer <token>); PostgreSQL keeps only their hash");

  token
    .command("create")
    .description(
      "create a token and print it once: read reads, trigger also triggers/reruns/cancels, admin also applies config, pauses schedules, manages tokens",
    )
    .requiredOption("--name <name>", "unique name, shown in the audit log")
    .requiredOption("--scope <scope>", TOKEN_SCOPES.join("|"))
    .option("--expires <duration>", 'stop working after this long, e.g. "30d" (default: never)')
    .option("--json", "print the token and its details as JSON")
    .action(async (raw: Record<string, unknown>) => {
      const flags = parseFlags(
        z.object({
          name: z.string().regex(TOKEN_NAME, TOKEN_NAME_RULE),
          scope: z.enum(TOKEN_SCOPES),
          expires: durationFlagAtLeast(1000, '1s (write a duration such as "30d")').optional(),
          json: z.boolean().optional(),
        }),
        raw,
        "token create",
      );
      await withTokenApi(async (tokens) => {
        const created = await tokens.create({ name: flags.name, scope: flags.scope, expires: flags.expires });
        if (flags.json) {
          console.log(JSON.stringify(created));
          return;
        }
        console.log(created.token);
        console.error(
          `token "${created.name}" (scope ${created.scope}, expires ${iso(created.expiresAt)}): copy it now, it is not shown again`,
        );
      });
    });

  token
    .command("list")
    .description("token names, scopes, creation, last use and expiry (never the tokens)")
    .option("--json", "print them as JSON")
    .action(async (raw: { json?: boolean }) => {
      await withTokenApi(async (tokens) => {
        const listed = await tokens.list();
        if (raw.json) {
          console.log(JSON.stringify(listed, null, 2));
          return;
        }
        if (listed.length === 0) console.log("no tokens; create one with `ax token create --name <name> --scope read|trigger|admin`");
        for (const t of listed) {
          const expired = t.expiresAt !== null && t.expiresAt.getTime() <= Date.now() ? " (expired)" : "";
          console.log(
            [
              t.name.padEnd(20),
              t.scope.padEnd(7),
              `created ${iso(t.createdAt)}`,
              `last used ${iso(t.lastUsedAt)}`,
              `expires ${iso(t.expiresAt)}${expired}`,
            ].join("  "),
          );
        }
      });
    });

  token
    .command("revoke <name>")
    .description("delete a token: every API process refuses it from the next request")
    .action(async (name: string) => {
      await withTokenApi(async (tokens) => {
        await tokens.revoke(name);
        console.log(`token "${name}" revoked`);
      });
    });
}
