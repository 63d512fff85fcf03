/** Errors of API tokens, scopes and the server's authentication settings. */

/** The request carries no token, or one that is unknown, revoked or expired (HTTP 401). */
export class AxUnauthorizedError extends Error {
  override name = "AxUnauthorizedError";
  readonly statusCode = 401;
}

/** The token is valid but its scope is too small for the route (HTTP 403). */
export class AxForbiddenError extends Error {
  override name = "AxForbiddenError";
  readonly statusCode = 403;
  constructor(
    readonly needed: string,
    readonly had: string,
    route: string,
  ) {
    super(
      `${route} needs a token with scope "${needed}" (or wider); this token has "${had}". Create one with \`ax token create --name <name> --scope ${needed}\``,
    );
  }
}

/** Too many failed authentication attempts from one client address (HTTP 429). */
export class AxTooManyAuthFailuresError extends Error {
  override name = "AxTooManyAuthFailuresError";
  readonly statusCode = 429;
  constructor(readonly retryAfterSeconds: number) {
    super(`too many failed authentication attempts from this address; retry in ${retryAfterSeconds} s with a valid token`);
  }
}

/** An API process would start open to anyone: no token is stored and no-auth was not asked for. */
export class AxNoTokensError extends Error {
  override name = "AxNoTokensError";
  constructor() {
    super(
      "the API refuses to start: no API token is stored. Create one with `ax token create --name admin --scope admin`, or start with --insecure-no-auth (Runtime option insecureNoAuth: true) only on a network you trust",
    );
  }
}

/** `ax token create` with a name in use, or `revoke` of an unknown name. */
export class AxTokenNameError extends Error {
  override name = "AxTokenNameError";
}
