import { z } from "zod";
import { API_ROUTES, type RouteDoc } from "./api-routes.js";
import { apiError } from "./api-schemas.js";

type JsonSchema = Record<string, unknown>;

/** The JSON Schema of what a request must send (zod's input side), embeddable in OpenAPI 3.1. */
function requestSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  return rest;
}

function responseSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: "output", unrepresentable: "any" }) as JsonSchema;
  return rest;
}

function parameters(schema: z.ZodObject | undefined, where: "path" | "query"): JsonSchema[] {
  if (!schema) return [];
  const json = requestSchema(schema) as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name,
    in: where,
    required: where === "path" || (json.required ?? []).includes(name),
    schema: property,
  }));
}

/** What every route of a kind may answer besides its own: the server's checks before any route runs. */
function sharedAnswers(method: string, url: string, doc: RouteDoc): Record<string, JsonSchema> {
  const error = { "application/json": { schema: responseSchema(apiError) } };
  const answers: Record<string, JsonSchema> = {
    400: {
      description: doc.query
        ? "the query does not match its schema (unknown, repeated or malformed parameters)"
        : "a query parameter was sent: this route takes none",
      content: error,
    },
  };
  if (method !== "GET") {
    answers[415] = { description: "a body that is not content-type: application/json", content: error };
    answers[413] = { description: "a body over the server's 4 MiB limit (a payload over 1 MiB: AxPayloadTooLargeError)", content: error };
  }
  if (url.startsWith("/api/") && url !== "/api/openapi.json") {
    answers[503] = { description: "PostgreSQL could not be reached (AxStoreError); retry once it is back", content: error };
  }
  if (doc.scope !== "public") {
    answers[401] = { description: "no token, or an unknown, revoked or expired one (AxUnauthorizedError)", content: error };
    answers[403] = {
      description: `the token's scope is below "${doc.scope === "metrics" ? "read" : doc.scope}" (AxForbiddenError)`,
      content: error,
    };
    answers[429] = {
      description: "too many failed authentication attempts from this address; see Retry-After (AxTooManyAuthFailuresError)",
      content: error,
    };
  }
  return answers;
}

function operation(doc: RouteDoc, method: string, url: string): JsonSchema {
  const responses: Record<string, JsonSchema> = Object.fromEntries(
    Object.entries(doc.responses).map(([status, answer]) => [
      status,
      {
        description: answer.description,
        ...(answer.schema ? { content: { "application/json": { schema: responseSchema(answer.schema) } } } : {}),
        ...(answer.contentType ? { content: { [answer.contentType]: { schema: { type: "string" } } } } : {}),
      },
    ]),
  );
  for (const [status, answer] of Object.entries(sharedAnswers(method, url, doc))) responses[status] ??= answer;
  return {
    summary: doc.summary,
    security: doc.scope === "public" ? [] : [{ bearer: [] }],
    "x-ax-scope": doc.scope,
    ...(doc.params || doc.query ? { parameters: [...parameters(doc.params, "path"), ...parameters(doc.query, "query")] } : {}),
    // Required when an empty body would be refused (a backfill's range, a token's name).
    ...(doc.body
      ? { requestBody: { required: !doc.body.safeParse({}).success, content: { "application/json": { schema: requestSchema(doc.body) } } } }
      : {}),
    responses,
  };
}

/** fastify's `/api/runs/:id` is OpenAPI's `/api/runs/{id}`. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the zod schemas the routes parse
 * with (`API_ROUTES`), so the two cannot drift apart.
 */
export function openApiDocument(version: string): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const [key, doc] of Object.entries(API_ROUTES)) {
    const [method, url] = key.split(" ") as [string, string];
    const path = openApiPath(url);
    paths[path] = { ...paths[path], [method.toLowerCase()]: operation(doc, method, url) };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "ax HTTP API",
      version,
      description:
        "Runs, triggers and metrics of an ax cluster. Every /api route needs `Authorization: Bearer <token>` with the scope in x-ax-scope (read < trigger < admin), unless the server runs with insecureNoAuth.",
    },
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    paths,
  };
}
