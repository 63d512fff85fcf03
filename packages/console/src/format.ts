export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} m`;
}

export function between(start: string | null, end: string | null, now = Date.now()): string {
  if (!start) return "—";
  return duration((end ? Date.parse(end) : now) - Date.parse(start));
}

export function time(iso: string | null): string {
  if (!iso) return "—";
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

export function shortId(id: string): string {
  return id.slice(0, 8);
}

/** A JSON value on a few lines at most, for summaries in tables and panels. */
export function summary(value: unknown, max = 400): string {
  const text = JSON.stringify(value, null, 2) ?? "null";
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
