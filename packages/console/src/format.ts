const UNITS = {
  en: { ms: "ms", s: "s", m: "m", h: "h" },
  zh: { ms: "毫秒", s: "秒", m: "分", h: "小时" },
};
let units = UNITS.en;

/**
 * Set by the language switch. Module state rather than a hook's: durations are also formatted
 * outside React's render (the attempts chart's ticks and tooltips).
 */
export function setDurationLanguage(lang: keyof typeof UNITS): void {
  units = UNITS[lang];
}

export function duration(ms: number): string {
  const u = units;
  if (ms < 1000) return `${Math.round(ms)} ${u.ms}`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} ${u.s}`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} ${u.m} ${Math.round(s % 60)} ${u.s}`;
  return `${Math.floor(m / 60)} ${u.h} ${m % 60} ${u.m}`;
}

/** A configured duration in the largest whole unit it is written in (60000 -> "1 m"), as someone would have set it. */
export function configuredDuration(ms: number): string {
  const u = units;
  for (const [size, unit] of [
    [3_600_000, u.h],
    [60_000, u.m],
    [1000, u.s],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${unit}`;
  }
  return `${ms} ${u.ms}`;
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
