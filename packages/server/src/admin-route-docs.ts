import { z } from "zod";
import {
  alertsQuery,
  alertMute,
  alertTestBody,
  muteBody,
  muteIdParams,
  mutesQuery,
  loggedAlert,
  configBody,
  configCheckBody,
  configDiffQuery,
  configEffectiveQuery,
  configHistoryQuery,
  configRollbackBody,
  configVersionParams,
  auditQuery,
  tokenBody,
  tokenNameParams,
  tokenInfo,
  auditEntry,
  apiError,
  session,
  configVersion,
  effectiveOption,
  pruneAnswer,
  pruneBody,
} from "./api-schemas.js";
import { configHistoryEntry, processConfigState } from "./response-schemas.js";
import { badRequest, configUnavailable, type RouteDoc } from "./route-doc.js";

const configApplied = configVersion.extend({
  warnings: z.array(z.string()),
  unchanged: z.boolean().meta({ description: "true when nothing was stored: the text was the newest version's" }),
});

const configRefused = {
  description: "invalid YAML or request: the error names file, line, column and key; nothing is stored",
  schema: apiError.extend({
    file: z.string().optional(),
    line: z.number().int().optional(),
    column: z.number().int().optional(),
    key: z.string().optional(),
  }),
};

/** Administration: configuration versions, the audit log, sent alerts, API tokens. */
export const ADMIN_ROUTE_DOCS: Record<string, RouteDoc> = {
  "GET /api/config": {
    scope: "read",
    summary: "the config version in force (the newest stored), or null",
    responses: { 200: { description: "the version", schema: z.object({ config: configVersion.nullable() }) }, 501: configUnavailable },
  },
  "GET /api/config/versions": {
    scope: "read",
    summary: "stored config versions, newest first, with lines added and removed",
    query: configHistoryQuery,
    responses: {
      200: { description: "versions", schema: z.object({ versions: z.array(configHistoryEntry) }) },
      400: badRequest,
      501: configUnavailable,
    },
  },
  "GET /api/config/versions/:version": {
    scope: "read",
    summary: "one stored config version with its diff to the one before",
    params: configVersionParams,
    responses: {
      200: { description: "the version", schema: configVersion },
      400: badRequest,
      404: { description: "unknown version", schema: apiError },
      501: configUnavailable,
    },
  },
  "GET /api/config/diff": {
    scope: "read",
    summary: "unified diff from one stored config version to another, secrets masked on both sides",
    query: configDiffQuery,
    responses: {
      200: { description: "the diff", schema: z.object({ diff: z.string() }) },
      400: badRequest,
      404: { description: "unknown version", schema: apiError },
      501: configUnavailable,
    },
  },
  "POST /api/config/check": {
    scope: "admin",
    summary:
      "what POST /api/config would do with this runtime.yaml, storing nothing: its refusal, or the diff from the version in force and the warnings",
    body: configCheckBody,
    responses: {
      200: {
        description: "valid: the diff from the version in force (secrets masked on both sides) and the warnings apply would give",
        schema: z.object({
          inForce: z.number().int().nullable().meta({ description: "the version in force, null while none is stored" }),
          unchanged: z.boolean().meta({ description: "the text is the version in force's own: apply would store nothing" }),
          diff: z.string(),
          warnings: z.array(z.string()),
        }),
      },
      400: configRefused,
      501: configUnavailable,
    },
  },
  "POST /api/config/rollback": {
    scope: "admin",
    audit: "config.rollback",
    summary: "store a new config version whose text is that stored version's (validated again); every process applies it within seconds",
    body: configRollbackBody,
    responses: {
      200: {
        description: "that text is the newest version's already: nothing stored; that version, with `unchanged: true`",
        schema: configApplied,
      },
      201: { description: "the stored version, with `warnings` as POST /api/config gives them", schema: configApplied },
      400: configRefused,
      404: { description: "unknown version", schema: apiError },
      501: configUnavailable,
    },
  },
  "POST /api/config": {
    scope: "admin",
    audit: "config.apply",
    summary: "validate runtime.yaml against the cluster's flows, store it as a new version; every process applies it within seconds",
    body: configBody,
    responses: {
      200: {
        description: "the text is the newest version's own: nothing stored; that version, with `unchanged: true` and `warnings`",
        schema: configApplied,
      },
      201: {
        description:
          "the stored version, with `warnings`: pools the code gives tasks that it leaves unsized (those tasks will not start), YAML error lists the code contradicts, and YAML queues no live worker serves",
        schema: configApplied,
      },
      400: configRefused,
      501: configUnavailable,
    },
  },
  "GET /api/config/effective": {
    scope: "read",
    summary: "every option's effective value and its source (yaml vN, code or default); durations in ms",
    query: configEffectiveQuery,
    responses: {
      200: {
        description: "effective config",
        schema: z.object({
          version: z.number().int().nullable(),
          cluster: z.array(effectiveOption),
          tasks: z.record(z.string(), z.array(effectiveOption)),
          flows: z.record(z.string(), z.array(effectiveOption)),
        }),
      },
      400: { description: "a task no Runtime registered and the config does not name (AxConfigError)", schema: apiError },
      404: { description: "a flow no Runtime registered (AxUnknownFlowError)", schema: apiError },
      501: configUnavailable,
    },
  },
  "GET /api/config/cluster": {
    scope: "read",
    summary: "every process of the cluster (workers, coordinators, API processes) and the config version it applies, newest report first",
    responses: {
      200: {
        description: "the newest stored version and each process; a live one on another version is a straggler",
        schema: z.object({ version: z.number().int().nullable(), processes: z.array(processConfigState) }),
      },
      501: configUnavailable,
    },
  },
  "GET /api/audit": {
    summary: "the audit log, newest first: who triggered, cancelled, reran, applied config, paused schedules, managed tokens",
    scope: "admin",
    query: auditQuery,
    responses: { 200: { description: "entries", schema: z.object({ entries: z.array(auditEntry) }) }, 400: badRequest },
  },
  "GET /api/alerts": {
    summary: "alerts the coordinators sent, newest first, with what each sink answered",
    scope: "read",
    query: alertsQuery,
    responses: { 200: { description: "sent alerts", schema: z.object({ alerts: z.array(loggedAlert) }) }, 400: badRequest },
  },
  "GET /api/alerts/mutes": {
    summary: "operators' alert mutes in force, ending soonest first (with ended=true: those ended in the last 30 days too)",
    scope: "read",
    query: mutesQuery,
    responses: { 200: { description: "mutes", schema: z.object({ mutes: z.array(alertMute) }) }, 400: badRequest },
  },
  "POST /api/alerts/mutes": {
    summary: "mute a group's alerts (a flow's, a task's) cluster-wide for a while; audited as alerts.mute",
    scope: "admin",
    body: muteBody,
    responses: {
      201: { description: "the mute", schema: alertMute },
      400: badRequest,
      404: { description: "the config in force defines no such group, or no such flow or task is registered", schema: apiError },
    },
  },
  "POST /api/history/prune": {
    summary:
      "delete (with archive: first copy) finished runs older than olderThan with their nodes, attempts, task logs and keys, and the once keys, schedule ticks and sent alerts as old, in short transactions (ax prune); audited as history.prune",
    scope: "admin",
    audit: "history.prune",
    body: pruneBody,
    responses: {
      200: {
        description:
          "what was removed, or with dryRun what would be; a caller that disconnects stops the prune after its current batch (run it again to continue)",
        schema: pruneAnswer,
      },
      400: {
        description: "the request does not match its schema, or olderThan is not a duration of at least 1h (AxRetentionError)",
        schema: apiError,
      },
      409: {
        description: "another prune is running: a coordinator's hourly pass or another ax prune (AxPruneBusyError)",
        schema: apiError,
      },
      501: { description: "this server was started without a prune service", schema: apiError },
    },
  },
  "POST /api/alerts/test": {
    summary:
      "send a test alert through every sink of a group of the config in force, ignoring triggers and silence; each sink's outcome (ax alerts test); audited as alerts.test",
    scope: "admin",
    audit: "alerts.test",
    body: alertTestBody,
    responses: {
      200: {
        description: "what each sink of the group answered; a failed sink is `ok: false` with its reason",
        schema: z.object({
          group: z.string(),
          results: z.array(z.object({ sink: z.string(), target: z.string(), ok: z.boolean(), error: z.string().optional() })),
        }),
      },
      400: badRequest,
      404: { description: "the config in force defines no such group (AxAlertGroupNotFoundError)", schema: apiError },
      501: configUnavailable,
    },
  },
  "DELETE /api/alerts/mutes/:id": {
    summary: "end a mute now; audited as alerts.unmute",
    scope: "admin",
    params: muteIdParams,
    responses: {
      200: { description: "the mute, ended", schema: alertMute },
      404: { description: "no mute with this id is in force", schema: apiError },
    },
  },
  "GET /api/session": {
    scope: "read",
    summary: "the token this request came with: its name, scope and expiry (the console disables what the scope does not allow)",
    responses: { 200: { description: "the caller's token", schema: session } },
  },
  "GET /api/tokens": {
    summary: "API tokens: names, scopes, last use, expiry (never the tokens themselves)",
    scope: "admin",
    responses: { 200: { description: "tokens", schema: z.object({ tokens: z.array(tokenInfo) }) } },
  },
  "POST /api/tokens": {
    summary: "create a token; the answer is the only time the token is shown",
    scope: "admin",
    body: tokenBody,
    responses: {
      201: { description: "the new token", schema: tokenInfo.extend({ token: z.string() }) },
      400: badRequest,
      409: { description: "a token has this name", schema: apiError },
    },
  },
  "DELETE /api/tokens/:name": {
    summary: "revoke a token: it stops working at once on every server",
    scope: "admin",
    params: tokenNameParams,
    responses: {
      200: { description: "revoked", schema: z.object({ revoked: z.string() }) },
      404: { description: "no token has this name", schema: apiError },
    },
  },
};
