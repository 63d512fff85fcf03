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

function headers(json: boolean): Record<string, string> {
  const h: Record<string, string> = {};
  const t = token.get();
  if (t) h.authorization = `Bearer ${t}`;
  if (json) h["content-type"] = "application/json";
  return h;
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) onUnauthorized();
  const text = await response.text();
  const parsed = text ? (JSON.parse(text) as unknown) : null;
  if (!response.ok) {
    const e = (parsed ?? {}) as { error?: string; message?: string };
    throw new ApiError(response.status, e.error ?? `HTTP ${response.status}`, e.message ?? response.statusText);
  }
  return parsed as T;
}

export const api = {
  get: <T>(path: string) => call<T>("GET", path),
  post: <T>(path: string, body: unknown = {}) => call<T>("POST", path, body),
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
  const response = await fetch(path, { headers: headers(false), signal });
  if (response.status === 401) onUnauthorized();
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
