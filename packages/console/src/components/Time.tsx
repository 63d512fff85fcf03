import { browserZone, dateTime, type TimeOptions, zoneName } from "../format";

/**
 * A moment as the console writes it, its exact UTC instant in the tooltip (as `ax runs` prints it).
 * `zone` names the zone after the time; a table column names it once in its header instead.
 */
export function Time({ iso, zone = false, ...options }: { iso: string | null; zone?: boolean } & TimeOptions) {
  if (!iso) return <>—</>;
  const at = new Date(iso);
  // A time in another zone than the browser's (a schedule's) also says what that is here.
  const title = options.timeZone ? `${dateTime(iso)} ${zoneName(at)} · ${at.toISOString()}` : at.toISOString();
  return (
    <time dateTime={at.toISOString()} title={title} className="nowrap">
      {dateTime(iso, options)}
      {zone && ` ${options.timeZone ?? zoneName(at)}`}
    </time>
  );
}

/** The browser's zone after a column's or a list's title: its times are in it. */
export function Zone() {
  return (
    <span className="zone" title={browserZone()}>
      {zoneName()}
    </span>
  );
}
