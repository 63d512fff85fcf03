import type { FastifyInstance, FastifyReply, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Logger } from "pino";
import { AxConfigConflictError, AxConfigError, AxConfigUnavailableError, AxConfigVersionNotFoundError } from "@ax/common";
import {
  configBody,
  configCheckBody,
  configDiffQuery,
  configEffectiveQuery,
  configHistoryQuery,
  configRollbackBody,
  configVersionParams,
  parseQuery,
  alertTestBody,
} from "./api-schemas.js";
import { bodyOf } from "./json-body.js";

/**
 * Stored configuration versions, as the SDK's `LiveConfig` serves them (validating YAML needs the
 * SDK's option schemas, which this package must not import: the SDK depends on it).
 */
export interface ConfigService {
  /** `redacted`: secrets, header values and webhook URLs masked (every read through the API). */
  current(options: { redacted: boolean }): Promise<{ version: number } | undefined>;
  history(limit?: number): Promise<object[]>;
  version(version: number, options: { redacted: boolean }): Promise<object>;
  /** `base`: the version whose API text `yaml` is an edit of (AxConfigConflictError when it is no longer in force). */
  apply(
    yaml: string,
    file: string,
    author: string,
    options: { base?: number | undefined },
  ): Promise<{ version: number; warnings: string[]; unchanged: boolean }>;
  check(yaml: string, file: string, options: { redacted: boolean; base?: number | undefined }): Promise<object>;
  rollback(version: number, author: string): Promise<{ version: number; warnings: string[]; unchanged: boolean }>;
  diff(a: number, b: number, options: { redacted: boolean }): Promise<string>;
  effective(filter: { task?: string | undefined; flow?: string | undefined }): Promise<object>;
  /** Every process of the cluster with the config version it last reported. */
  cluster(): Promise<object[]>;
  /** A `test` alert through every sink of a group of the version in force; each sink's outcome. */
  testAlert(group: string, log: Logger): Promise<object[]>;
}

type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

/**
 * `GET /api/config`, `GET /api/config/effective`, `GET /api/config/cluster`, `GET /api/config/versions[/:version]`,
 * `GET /api/config/diff`, `POST /api/config`, `POST /api/config/check`, `POST /api/config/rollback`, and
 * `POST /api/alerts/test`, which sends with the version in force's sinks.
 */
export function registerConfigRoutes(app: App, service: ConfigService | undefined): void {
  const config = (): ConfigService => {
    if (!service) {
      throw new AxConfigUnavailableError(
        "this server has no config service; start it with `ax server` or a Runtime with the api role, or use `ax config` from the CLI",
      );
    }
    return service;
  };

  app.get("/api/config", async () => ({ config: (await config().current({ redacted: true })) ?? null }));

  app.get("/api/config/effective", async (request) => config().effective(parseQuery(configEffectiveQuery, request.query)));

  app.get("/api/config/cluster", async () => {
    const [processes, current] = await Promise.all([config().cluster(), config().current({ redacted: true })]);
    return { version: current?.version ?? null, processes };
  });

  app.get("/api/config/versions", async (request) => {
    const { limit } = parseQuery(configHistoryQuery, request.query);
    return { versions: await config().history(limit) };
  });

  app.get<{ Params: { version: string } }>("/api/config/versions/:version", async (request) => {
    const { version } = configVersionParams.parse(request.params);
    return config().version(version, { redacted: true });
  });

  app.get("/api/config/diff", async (request) => {
    const { from, to } = parseQuery(configDiffQuery, request.query);
    return { diff: await config().diff(from, to, { redacted: true }) };
  });

  app.post("/api/config", async (request, reply) => {
    const body = configBody.parse(bodyOf(request));
    return answerApplied(reply, () => config().apply(body.yaml, body.file ?? "api", body.author, { base: body.base }));
  });

  app.post("/api/config/rollback", async (request, reply) => {
    const body = configRollbackBody.parse(bodyOf(request));
    return answerApplied(reply, () => config().rollback(body.version, body.author));
  });

  app.post("/api/config/check", async (request, reply) => {
    const body = configCheckBody.parse(bodyOf(request));
    try {
      return await config().check(body.yaml, body.file ?? "api", { redacted: true, base: body.base });
    } catch (error) {
      return refuseConfig(reply, error);
    }
  });

  // The sinks' secrets never leave this process: it sends the test alert itself and answers each sink's outcome.
  app.post("/api/alerts/test", async (request) => {
    const { group } = alertTestBody.parse(bodyOf(request));
    return { group, results: await config().testAlert(group, request.log) };
  });

  /** 201 and the stored version, or 200 and the newest when nothing changed; 400 naming the YAML's place when it is refused. */
  async function answerApplied(reply: FastifyReply, applying: () => Promise<{ version: number; warnings: string[]; unchanged: boolean }>) {
    try {
      const applied = await applying();
      const shown = await config().version(applied.version, { redacted: true });
      return reply.status(applied.unchanged ? 200 : 201).send({ ...shown, warnings: applied.warnings, unchanged: applied.unchanged });
    } catch (error) {
      return refuseConfig(reply, error);
    }
  }
}

/** A YAML the cluster refuses is the caller's to fix: 400 with the file, line, column and key it names. */
function refuseConfig(reply: FastifyReply, error: unknown) {
  if (!(error instanceof AxConfigError)) throw error;
  const { name, message, file, line, column, key } = error;
  return reply.status(400).send({ error: name, message, file, line, column, key });
}

export function configErrorStatus(error: Error): number | undefined {
  if (error instanceof AxConfigVersionNotFoundError) return 404;
  if (error instanceof AxConfigUnavailableError) return 501;
  if (error instanceof AxConfigConflictError) return 409;
  // An unknown task named by `GET /api/config/effective?task=`.
  if (error instanceof AxConfigError) return 400;
  return undefined;
}
