import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Logger } from "pino";
import { AxConfigError, AxConfigUnavailableError, AxConfigVersionNotFoundError } from "@ax/common";
import { configBody, configVersionParams } from "./api-schemas.js";
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
  apply(yaml: string, file: string, author: string): Promise<{ version: number; warnings: string[]; unchanged: boolean }>;
  effective(): Promise<object>;
  /** Every process of the cluster with the config version it last reported. */
  cluster(): Promise<object[]>;
}

type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

/** `GET /api/config`, `GET /api/config/effective`, `GET /api/config/cluster`, `GET /api/config/versions[/:version]`, `POST /api/config`. */
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

  app.get("/api/config/effective", async () => config().effective());

  app.get("/api/config/cluster", async () => {
    const [processes, current] = await Promise.all([config().cluster(), config().current({ redacted: true })]);
    return { version: current?.version ?? null, processes };
  });

  app.get("/api/config/versions", async () => ({ versions: await config().history() }));

  app.get<{ Params: { version: string } }>("/api/config/versions/:version", async (request) => {
    const { version } = configVersionParams.parse(request.params);
    return config().version(version, { redacted: true });
  });

  app.post("/api/config", async (request, reply) => {
    const body = configBody.parse(bodyOf(request));
    try {
      const applied = await config().apply(body.yaml, body.file ?? "api", body.author);
      const shown = await config().version(applied.version, { redacted: true });
      return reply.status(applied.unchanged ? 200 : 201).send({ ...shown, warnings: applied.warnings, unchanged: applied.unchanged });
    } catch (error) {
      if (error instanceof AxConfigError) {
        const { name, message, file, line, column, key } = error;
        return reply.status(400).send({ error: name, message, file, line, column, key });
      }
      throw error;
    }
  });
}

export function configErrorStatus(error: Error): number | undefined {
  if (error instanceof AxConfigVersionNotFoundError) return 404;
  if (error instanceof AxConfigUnavailableError) return 501;
  return undefined;
}
