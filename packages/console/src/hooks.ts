import { useCallback, useEffect, useState } from "react";
import { api } from "./api";

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  reload: () => void;
}

/** GETs `path` (again every `refreshMs` when given); undefined path: nothing yet. */
export function useApi<T>(path: string | undefined, refreshMs?: number): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: tick asks for a reload
  useEffect(() => {
    if (!path) return;
    let live = true;
    api
      .get<T>(path)
      .then((d) => {
        if (!live) return;
        setData(d);
        setError(undefined);
      })
      .catch((e: Error) => live && setError(e));
    const timer = refreshMs ? setInterval(reload, refreshMs) : undefined;
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [path, tick, refreshMs, reload]);
  return { data, error, reload };
}

/** Re-renders every `ms` (countdowns, running durations). */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}
