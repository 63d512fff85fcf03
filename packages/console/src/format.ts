type Lang = "en" | "zh";

const UNITS = {
  en: { ms: "ms", s: "s", m: "m", h: "h" },
  zh: { ms: "毫秒", s: "秒", m: "分", h: "小时" },
};
/** en-GB rather than en-US: "Wed 2 Dec, 15:04:05", day before month and a 24-hour clock, as the CLI's ISO times read. */
const LOCALES: Record<Lang, string> = { en: "en-GB", zh: "zh-CN" };
let units = UNITS.en;
let locale = LOCALES.en;

/**
 * Set by the language switch. Module state rather than a hook's: durations and times are also
 * formatted outside React's render (the attempts chart's ticks and tooltips, a node box's line).
 */
export function setFormatLanguage(lang: Lang): void {
  units = UNITS[lang];
  locale = LOCALES[lang];
}

/** Whole minutes and seconds (or hours and minutes), a zero second part left out: "1 m", not "1 m 0 s". */
function long(seconds: number): string {
  const u = units;
  const m = Math.floor(seconds / 60);
  if (m < 60) return seconds % 60 === 0 ? `${m} ${u.m}` : `${m} ${u.m} ${seconds % 60} ${u.s}`;
  return m % 60 === 0 ? `${Math.floor(m / 60)} ${u.h}` : `${Math.floor(m / 60)} ${u.h} ${m % 60} ${u.m}`;
}

export function duration(ms: number): string {
  const u = units;
  // A browser clock a little behind the server's puts a start just made in the future: it reads as just started.
  const n = Math.max(0, ms);
  // Each unit is chosen after rounding, so a value never shows as the next unit's size ("1000 ms", "60 s").
  if (Math.round(n) < 1000) return `${Math.round(n)} ${u.ms}`;
  const tenths = Math.round(n / 100);
  if (tenths < 100) return `${(tenths / 10).toFixed(1)} ${u.s}`;
  const seconds = Math.round(n / 1000);
  return seconds < 60 ? `${seconds} ${u.s}` : long(seconds);
}

/** An axis tick: exact to the hundredth of a second a chart's ticks step by ("2.25 s", not "2.3 s"), no trailing zeros. */
export function durationTick(ms: number): string {
  if (ms < 1000 || ms >= 60_000) return duration(ms);
  return `${Number((ms / 1000).toFixed(2))} ${units.s}`;
}

export function between(start: string | null, end: string | null, now = Date.now()): string {
  if (!start) return "—";
  return duration((end ? Date.parse(end) : now) - Date.parse(start));
}

const formats = new Map<string, Intl.DateTimeFormat>();
/** Formatters are slow to build and a log view formats hundreds of times a render: one per shape. */
function format(tag: string, options: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  const key = `${tag}|${JSON.stringify(options)}`;
  let f = formats.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat(tag, options);
    formats.set(key, f);
  }
  return f;
}

export interface TimeOptions {
  /** An IANA zone (a schedule's); the browser's own when absent. */
  timeZone?: string | undefined;
  /** Cron times are whole minutes: their ":00" says nothing (see `fireSeconds`). */
  seconds?: boolean;
}

/**
 * Whether a schedule's fire times need their seconds: a 6-field cron has a seconds field, and
 * times that are not whole minutes (or two within one minute) would otherwise read alike.
 */
export function fireSeconds(cron: string, times: string[]): boolean {
  if (cron.trim().split(/\s+/).length >= 6) return true;
  const minutes = times.map((t) => Math.floor(Date.parse(t) / 60_000));
  return times.some((t) => Date.parse(t) % 60_000 !== 0) || new Set(minutes).size < minutes.length;
}

/** The console's one way to write a moment: "Wed 2 Dec, 15:04:05", with the year when it is not this one. */
export function dateTime(iso: string, { timeZone, seconds = true }: TimeOptions = {}): string {
  const d = new Date(iso);
  const year = (at: Date) => format("en-GB", { year: "numeric", timeZone }).format(at);
  const thisYear = year(d) === year(new Date());
  const options: Intl.DateTimeFormatOptions = {
    weekday: "short",
    day: "numeric",
    month: "short",
    ...(thisYear ? {} : { year: "numeric" }),
    hour: "2-digit",
    minute: "2-digit",
    ...(seconds ? { second: "2-digit" } : {}),
    hourCycle: "h23",
    timeZone,
  };
  return format(locale, options).format(d);
}

/**
 * A zone's short name at `at` ("EST", "CET"; "GMT+5:30" where it has none). From en-US whatever
 * the language: the other locales write GMT offsets even for the zones that have names.
 */
export function zoneName(at: Date = new Date(), timeZone?: string): string {
  const parts = format("en-US", { timeZoneName: "short", timeZone }).formatToParts(at);
  return parts.find((p) => p.type === "timeZoneName")?.value ?? "";
}

/** The browser's zone, as the API's UTC times are shown in it. */
export const browserZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone;

/** A moment in text only (a tooltip, a node box's line): the time and its zone. */
export function time(iso: string | null): string {
  if (!iso) return "—";
  return `${dateTime(iso)} ${zoneName(new Date(iso))}`;
}

/** The API's `waitingFor` of a delayed run or node, "due at <ISO>". */
const DUE_AT = /^due at (\d{4}-\d\d-\d\dT\S+Z)$/;

/** `waitingFor` with a delayed run's due time as the console writes times; other reasons as the API words them. */
export function waitingFor(text: string, dueAt: string): string {
  const due = DUE_AT.exec(text)?.[1];
  return due ? `${dueAt} ${time(due)}` : text;
}

/** The UTC moment in a `waitingFor`, for its tooltip. */
export function waitingDue(text: string): string | undefined {
  return DUE_AT.exec(text)?.[1];
}

/**
 * A run id as pages show it: its last 8 characters. Run ids are time-ordered UUIDs, whose first
 * characters are the same for every run of the same minute or so; the last ones are random.
 */
export function shortId(id: string): string {
  return id.slice(-8);
}

/** A JSON value on a few lines at most, for summaries in tables and panels. */
/** Names a task may give what it has done so far beside a `total`. */
const DONE_KEYS = ["done", "completed", "processed", "current", "count"];

/**
 * A task's `heartbeat(progress)` in a line: a number as a percentage, `{ done, total }` (or
 * completed, processed …) as `75/900 (8%)`, a flat object as `key value · key value`, anything
 * else as JSON cut at `max`. A node is 200 px wide: pretty-printed JSON would show its brace and
 * a key before the cut.
 */
export function progressText(progress: unknown, max: number): string {
  const cut = (text: string) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
  if (typeof progress === "number") return `${progress}%`;
  if (typeof progress === "string" || typeof progress === "boolean") return cut(String(progress));
  if (progress === null || typeof progress !== "object" || Array.isArray(progress)) return cut(JSON.stringify(progress) ?? "null");
  const fields = progress as Record<string, unknown>;
  const doneKey = DONE_KEYS.find((k) => typeof fields[k] === "number");
  if (typeof fields.total === "number" && doneKey) {
    const [done, total] = [fields[doneKey] as number, fields.total];
    return cut(`${done}/${total}${total > 0 ? ` (${Math.floor((100 * done) / total)}%)` : ""}`);
  }
  const entries = Object.entries(fields);
  if (entries.every(([, v]) => v === null || typeof v !== "object")) return cut(entries.map(([k, v]) => `${k} ${v}`).join(" · "));
  return cut(JSON.stringify(progress));
}

export function summary(value: unknown, max = 400): string {
  const text = JSON.stringify(value, null, 2) ?? "null";
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** A config value cut after each comma (and the space after it), where a narrow column may wrap it. */
export function fieldPieces(text: string): string[] {
  return text.split(/(?<=, ?)(?=\S)/);
}
