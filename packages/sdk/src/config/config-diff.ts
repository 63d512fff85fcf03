import { lazyRequire } from "@ax/common";
import type { ConfigVersion } from "@ax/store";

/** jsdiff, loaded by the first diff or history shown. */
const jsdiff = lazyRequire<typeof import("diff")>(import.meta.url, "diff");

export type Diffed = Pick<ConfigVersion, "version" | "file" | "yaml" | "author" | "createdAt">;

/**
 * Unified diff between two config texts, headed by version, file, author and time; `after`
 * unstored (a file checked before it is applied) is named `(not stored) <file>`.
 */
export function diffText(before: Diffed | undefined, after: Diffed | { file: string; yaml: string }): string {
  const stored = "version" in after;
  // jsdiff heads a patch whose two names are equal (a version against itself) with an `Index:` line.
  return jsdiff()
    .createTwoFilesPatch(
      before ? `v${before.version} ${before.file}` : "(none)",
      stored ? `v${after.version} ${after.file}` : `(not stored) ${after.file}`,
      before?.yaml ?? "",
      after.yaml,
      before ? `${before.author} ${before.createdAt.toISOString()}` : undefined,
      stored ? `${after.author} ${after.createdAt.toISOString()}` : undefined,
    )
    .replace(/^Index: .*\n/, "");
}

/** Lines added and removed from `before` to `after` (a version's history line). */
export function changedLines(before: string, after: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const part of jsdiff().diffLines(before, after)) {
    if (part.added) added += part.count ?? 0;
    if (part.removed) removed += part.count ?? 0;
  }
  return { added, removed };
}
