import type { DataDirHolder } from "@ax/common";
import { AxApiAnsweredError, AxApiError, AxApiUnreachableError } from "./errors.js";

const REQUEST_TIMEOUT_MS = 30_000;

/** A value as JSON carries it: its Dates are ISO strings. */
export type Json<T> = T extends Date ? string : T extends (infer U)[] ? Json<U>[] : T extends object ? { [K in keyof T]: Json<T[K]> } : T;

/**
 * `?name=value&…` of the parameters given (none: ""). The API takes instants with an offset only,
 * and a Date's own text has none that it reads: a Date goes as its ISO text.
 */
export function queryString(params: object): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined) search.set(name, value instanceof Date ? value.toISOString() : String(value));
  }
  return search.size === 0 ? "" : `?${search}`;
}

/** One call of the HTTP API of the process holding an embedded data directory, answering its JSON. */
export type ApiRequest = <T>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown, options?: RequestOptions) => Promise<T>;

export interface RequestOptions {
  /** The caller's own stop (Ctrl-C): the call is abandoned and the signal's reason thrown. */
  signal?: AbortSignal | undefined;
  /** `false` for a call whose work may take minutes (a prune of a large history). @defaultValue 30 s */
  timeout?: false;
}

/**
 * Calls of `holder`'s API. An ax error the API answers for the request (4xx, `Ax…Error`) is thrown
 * as it came, so a command prints what it prints on the direct path; anything else is an
 * AxApiError naming the API.
 */
export function apiRequest(holder: DataDirHolder & { api: string }): ApiRequest {
  const api = holder.api.replace(/\/+$/, "");
  return async <T>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown, options: RequestOptions = {}): Promise<T> => {
    const timeout = options.timeout === false ? [] : [AbortSignal.timeout(REQUEST_TIMEOUT_MS)];
    let response: Response;
    try {
      response = await fetch(`${api}${path}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          // A Runtime serving its embedded history with tokens on (ax dev never checks them).
          ...(process.env.AX_TOKEN ? { authorization: `Bearer ${process.env.AX_TOKEN}` } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.any([...timeout, ...(options.signal ? [options.signal] : [])]),
      });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      throw new AxApiUnreachableError(api, holder.pid, cause ?? (error as Error).message);
    }
    const answer = (await response.json().catch(() => undefined)) as (T & { error?: unknown; message?: unknown }) | undefined;
    if (response.ok && answer !== undefined) return answer;
    const name = typeof answer?.error === "string" ? answer.error : "Error";
    const said = typeof answer?.message === "string" ? answer.message : response.statusText;
    const message =
      response.status === 401
        ? `${said} The ax CLI reaches this embedded history through the HTTP API of process ${holder.pid} (${api}): set AX_TOKEN to one of that API's tokens.`
        : said;
    if (response.status >= 400 && response.status < 500 && /^Ax[A-Za-z]+Error$/.test(name)) {
      throw new AxApiAnsweredError(api, response.status, name, message);
    }
    throw new AxApiError(api, response.status, name, message);
  };
}
