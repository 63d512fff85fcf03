import { useCallback, useEffect, useState } from "react";
import { api } from "./api";
import { errorText } from "./error-text";
import { useI18n } from "./i18n";

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

/**
 * A change the user asked for (a POST): `busy` while it is in flight, so its button can be
 * disabled against double submits, and the server's refusal (a 403 for a scope too small, a 409)
 * kept in `error` for the page to show.
 */
export function useAction(): { busy: boolean; error: string | undefined; run: (action: () => Promise<unknown>) => Promise<void> } {
  const { t } = useI18n();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const run = useCallback(
    async (action: () => Promise<unknown>) => {
      setBusy(true);
      setError(undefined);
      try {
        await action();
      } catch (e) {
        setError(errorText(e, t));
      } finally {
        setBusy(false);
      }
    },
    [t],
  );
  return { busy, error, run };
}
