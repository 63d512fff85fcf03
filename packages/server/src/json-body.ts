import type { FastifyInstance, FastifyRequest, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Logger } from "pino";
import { MAX_JSON_DEPTH } from "@ax/common";

type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

/** A request body the API refuses before any route sees it: 400 in the API's own `{ error, message }` shape. */
function badBody(message: string): Error & { statusCode: number } {
  return Object.assign(new Error(message), { name: "BadRequest", statusCode: 400 });
}

/**
 * A `__proto__` key, or `constructor.prototype`, would become a prototype wherever task code
 * copies the payload with `Object.assign`; JSON.parse itself keeps them as plain keys.
 */
function refusePrototypeKeys(this: unknown, key: string, value: unknown): unknown {
  if (key === "__proto__")
    throw badBody(
      'the body has a "__proto__" key, which the HTTP API refuses (it would set a prototype where a task copies the payload): rename the key',
    );
  if (key === "constructor" && typeof value === "object" && value !== null && Object.hasOwn(value, "prototype")) {
    throw badBody('the body has a "constructor.prototype" key, which the HTTP API refuses (prototype pollution): rename the key');
  }
  return value;
}

/** Reads `application/json` bodies with messages that say what is wrong, in place of Fastify's one-size answer. */
export function registerJsonBodies(app: App): void {
  // Every route takes JSON: a text body (fetch's default for a string) gets the 415 that says so, not a schema error.
  app.removeContentTypeParser("text/plain");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_request: FastifyRequest, body: string | Buffer, done) => {
    const text = body.toString();
    if (text.trim() === "") return done(null, undefined);
    try {
      done(null, JSON.parse(text, refusePrototypeKeys));
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 400) return done(error as Error, undefined);
      // Thousands of levels overflow the parser's stack before the payload's own depth check could say so.
      if (error instanceof RangeError) {
        const tooDeep = badBody(
          `the body is nested too deeply to read (a payload may nest at most ${MAX_JSON_DEPTH} levels); flatten the data, or store it elsewhere and pass its key`,
        );
        return done(Object.assign(tooDeep, { name: "AxPayloadError" }), undefined);
      }
      done(
        badBody(`the body is not valid JSON (${(error as Error).message}); send a JSON object with content-type: application/json`),
        undefined,
      );
    }
  });
}

/** A route's body for its schema: none at all reads as `{}` (no options); a JSON `null` is checked as sent, and refused. */
export function bodyOf(request: FastifyRequest): unknown {
  return request.body === undefined ? {} : request.body;
}
