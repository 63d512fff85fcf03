/** The most intervals open at one instant (an interval ending at t and one starting at t do not overlap). */
export function maxOverlap(intervals: { start: string | number | Date; end: string | number | Date }[]): number {
  const events = intervals.flatMap((i) => [
    { at: new Date(i.start).getTime(), delta: 1 },
    { at: new Date(i.end).getTime(), delta: -1 },
  ]);
  events.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let open = 0;
  let most = 0;
  for (const e of events) {
    open += e.delta;
    most = Math.max(most, open);
  }
  return most;
}
