import { useState } from "react";

/**
 * Newest-first pages read by id (`before=<the last id of the previous page>`): the ids of the
 * last entries of the pages read so far, so "older" goes one page back and "newest" to the top.
 */
export function useCursor(): { cursor: number | undefined; older: (lastId: number) => void; newest: () => void; deep: boolean } {
  const [before, setBefore] = useState<number[]>([]);
  return {
    cursor: before.at(-1),
    older: (lastId) => setBefore([...before, lastId]),
    newest: () => setBefore([]),
    deep: before.length > 0,
  };
}

/** The buttons under a newest-first list; nothing while the first page is empty. */
export function Pager({
  cursor,
  ids,
  pageSize,
  labels,
}: {
  cursor: ReturnType<typeof useCursor>;
  /** The ids on the page shown, in order. */
  ids: number[];
  pageSize: number;
  labels: { newest: string; older: string };
}) {
  if (ids.length === 0 && !cursor.deep) return null;
  const last = ids.at(-1);
  return (
    <div className="pager">
      <button type="button" disabled={!cursor.deep} onClick={cursor.newest}>
        {labels.newest}
      </button>
      <button type="button" disabled={ids.length < pageSize || last === undefined} onClick={() => last !== undefined && cursor.older(last)}>
        {labels.older} →
      </button>
    </div>
  );
}
