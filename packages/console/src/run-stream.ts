import { useEffect, useState } from "react";
import { ApiError, api, stream } from "./api";
import type { RunInfo } from "./types";

/** The run is not in the history: a mistyped id, or a finished run pruned by retention. */
export class RunNotFound extends Error {}

/**
 * The run, kept current by its SSE feed (one PostgreSQL poll on the server whatever the number of
 * viewers). `offline`: the server could not be reached the last time it was asked; `run` stays as
 * last seen meanwhile, and the feed is followed again once the server answers.
 */
export function useLiveRun(id: string): { run: RunInfo | undefined; error: Error | undefined; live: boolean; offline: boolean } {
  const [run, setRun] = useState<RunInfo>();
  const [error, setError] = useState<Error>();
  const [live, setLive] = useState(false);
  const [offline, setOffline] = useState(false);
  useEffect(() => {
    const abort = new AbortController();
    setRun(undefined);
    setError(undefined);
    setOffline(false);
    let ended = false;
    const follow = async (): Promise<void> => {
      try {
        await stream(
          `/api/runs/${id}/stream`,
          (data, event) => {
            if (event === "message") {
              setRun(JSON.parse(data) as RunInfo);
              setOffline(false);
              // Live once the feed answers, not while it is being asked for: a server that is down would make it blink.
              setLive(true);
            }
            if (event === "error") {
              const body = JSON.parse(data) as { error?: string; message: string };
              setError(body.error === "AxRunNotFoundError" ? new RunNotFound(body.message) : new Error(body.message));
            }
            if (event === "end" || event === "error") ended = true;
          },
          abort.signal,
        );
        // Closed without `end`: the server stopped (a restart, a deploy); follow the run again.
        if (!ended && !abort.signal.aborted) throw new Error("stream closed");
      } catch (e) {
        if (abort.signal.aborted) return;
        setLive(false);
        if (e instanceof ApiError && e.status === 404) {
          setError(new RunNotFound(e.message));
          return;
        }
        // Refused: the login screen is showing, and retrying would only present the bad token again.
        if (e instanceof ApiError && e.status === 401) return;
        // The server restarted or the network blinked: read the run once, then follow it again.
        // While nothing answers, the run stays as last seen and the page says the link is down.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        if (!abort.signal.aborted) {
          try {
            setRun(await api.get<RunInfo>(`/api/runs/${id}`));
            setOffline(false);
          } catch (reread) {
            if (reread instanceof ApiError && reread.status === 404) {
              setError(new RunNotFound(reread.message));
              return;
            }
            setOffline(true);
          }
          return follow();
        }
        return;
      }
      // The run ended (or the server refused it): nothing more will come.
      if (!abort.signal.aborted) setLive(false);
    };
    void follow();
    return () => abort.abort();
  }, [id]);
  return { run, error, live, offline };
}
