import type { FastifyReply, FastifyRequest } from "fastify";

/** Longest path segment a route takes (a flow's name, percent-encoded); Node's own limit on a request line is 16 KiB. */
export const MAX_PARAM_LENGTH = 4096;

/** Longest part of the URL a 404 quotes back. */
const SHOWN_URL_LENGTH = 200;

/**
 * The answer to a request no route serves. The router matches no parameter longer than
 * MAX_PARAM_LENGTH, so such a request is told that, not that its route does not exist.
 */
export function answerNoRoute(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = request.url.split("?", 1)[0] ?? "";
  if (path.split("/").some((segment) => segment.length > MAX_PARAM_LENGTH)) {
    return reply.status(414).send({
      error: "UriTooLong",
      message: `a path segment is over ${MAX_PARAM_LENGTH} characters; no flow name, run id or other name the API takes is that long`,
    });
  }
  const shown = request.url.length > SHOWN_URL_LENGTH ? `${request.url.slice(0, SHOWN_URL_LENGTH)}…` : request.url;
  return reply.status(404).send({ error: "NotFound", message: `no route ${request.method} ${shown}; GET /api/openapi.json lists them` });
}
