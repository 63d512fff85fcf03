const TOKEN_KEY = "ax.token";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The request never got an answer: the API server is down or restarting, or the network is. The
 * browser's own text for it ("Failed to fetch") says nothing a person can act on.
 */
export class ApiUnreachableError extends Error {
  constructor() {
    super("Cannot reach the ax API server: it may be down or restarting. The page tries again by itself.");
  }
}

/** `fetch`, with a request that got no answer said as ApiUnreachableError; the caller's own abort stays an abort. */
async function reach(path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(path, init);
  } catch (error) {
    if (init.signal?.aborted) throw error;
    throw new ApiUnreachableError();
  }
}

/** Raised on a 401: the app shows the login screen. */
let onUnauthorized: () => void = () => {};
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

export const token = {
  get: (): string | null => localStorage.getItem(TOKEN_KEY),
  set: (value: string) => localStorage.setItem(TOKEN_KEY, value),
  clear: () => localStorage.removeItem(TOKEN_KEY),
};

/**
 * The first request made with a token, while its answer is awaited. The page's other requests
 * wait for it rather than each presenting a token that may be stale: the server counts every wrong
 * token toward its per-address limit, and one page load sends several requests.
 */
let probe: { token: string; valid: Promise<boolean> } | undefined;

async function authorized(path: string, init: RequestInit, credential: string | null, json: boolean): Promise<Response> {
  const headers: Record<string, string> = {};
  if (credential) headers.authorization = `Bearer ${credential}`;
  if (json) headers["content-type"] = "application/json";
  const response = await reach(path, { ...init, headers });
  if (response.status === 401) {
    // A token the server refused is never sent again: it would only count toward the limit.
    if (credential && token.get() === credential) token.clear();
    onUnauthorized();
  }
  return response;
}

async function send(path: string, init: RequestInit, json = false): Promise<Response> {
  const stored = token.get();
  if (!stored) return authorized(path, init, null, json);
  if (probe?.token !== stored) {
    let settle: (valid: boolean) => void = () => {};
    const mine = { token: stored, valid: new Promise<boolean>((resolve) => (settle = resolve)) };
    probe = mine;
    try {
      const response = await authorized(path, init, stored, json);
      settle(response.status !== 401);
      return response;
    } catch (error) {
      // Unreachable is not refused: the waiting requests go ahead, the next one probes again.
      if (probe === mine) probe = undefined;
      settle(true);
      throw error;
    }
  }
  if (!(await probe.valid)) throw new ApiError(401, "AxUnauthorizedError", "the stored token was refused");
  return authorized(path, init, stored, json);
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await send(path, { method, body: body === undefined ? undefined : JSON.stringify(body) }, body !== undefined);
  return parse<T>(response);
}

async function parse<T>(response: Response): Promise<T> {
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? (JSON.parse(text) as unknown) : null;
  } catch (error) {
    // A proxy in front of a server that is down answers with its own page, not ax's JSON.
    if (response.ok) throw error;
  }
  if (!response.ok) {
    if (response.status === 502 || response.status === 503 || response.status === 504) {
      if (!(parsed as { error?: string } | null)?.error) throw new ApiUnreachableError();
    }
    const e = (parsed ?? {}) as { error?: string; message?: string };
    throw new ApiError(response.status, e.error ?? `HTTP ${response.status}`, e.message ?? response.statusText);
  }
  return parsed as T;
}

/**
 * Checks a token with one cheap read every scope may make (`GET /api/session`), then stores it. A
 * refusal throws the server's ApiError (401 not valid, 429 limited) and stores nothing.
 */
export async function signIn(value: string): Promise<void> {
  const response = await reach("/api/session", { headers: { authorization: `Bearer ${value}` } });
  await parse<unknown>(response);
  token.set(value);
  probe = { token: value, valid: Promise.resolve(true) };
}

export const api = {
  get: <T>(path: string) => call<T>("GET", path),
  post: <T>(path: string, body: unknown = {}) => call<T>("POST", path, body),
  delete: <T>(path: string) => call<T>("DELETE", path),
};

export function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}

/**
 * Reads an SSE stream with fetch rather than EventSource, which cannot send the Authorization
 * header. Calls `onData` per `data:` event and resolves when the server ends the stream.
 */
export async function stream(path: string, onData: (data: string, event: string) => void, signal: AbortSignal): Promise<void> {
  const response = await send(path, { signal });
  if (!response.ok || !response.body) throw new ApiError(response.status, `HTTP ${response.status}`, response.statusText);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) onData(data.join("\n"), event);
      end = buffer.indexOf("\n\n");
    }
  }
}
