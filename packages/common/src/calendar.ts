const CALENDAR_DATE = /^(\d{4})-(\d{2})-(\d{2})/;

/**
 * False when the text starts with a YYYY-MM-DD the calendar does not have (2026-02-30): `Date`
 * would roll it over to 2 March instead of refusing it. Text not starting with a date is not its
 * business (true).
 */
export function isCalendarDay(text: string): boolean {
  const match = CALENDAR_DATE.exec(text);
  if (!match) return true;
  const [year, month, day] = match.slice(1).map(Number) as [number, number, number];
  const at = new Date(Date.UTC(year, month - 1, day));
  return at.getUTCFullYear() === year && at.getUTCMonth() === month - 1 && at.getUTCDate() === day;
}
