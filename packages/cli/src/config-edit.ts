import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConfigApplied } from "ax-scheduler";
import type { ConfigApi } from "./config-commands.js";
import { AxConfigEditError } from "./errors.js";

/** The file name the stored version and a refusal's line and column name. */
export const EDITED_FILE = "ax config edit";

/** What the editor opens above the text, as git's commit template does; taken off before the text is sent. */
function header(version: number): string {
  return [
    `# Config v${version}, in force, as the API shows it: secrets masked, the file's comments not shown.`,
    `# Saved and closed, your changes are stored as a new version made on v${version}'s stored text: its`,
    "# comments stay, a [redacted] value left as it is keeps its stored value, and comments written",
    "# below are added where you write them. Close without changing anything to store nothing.",
    "",
  ].join("\n");
}

/** The saved text without the header's lines, also when the editor changed some of them: comments written in the text are kept, the header's are not. */
function withoutHeader(saved: string, opening: string): string {
  if (saved.startsWith(opening)) return saved.slice(opening.length);
  const headerLines = new Set(opening.split("\n").filter((line) => line !== ""));
  const lines = saved.split("\n");
  let first = 0;
  while (first < lines.length && (lines[first] === "" || headerLines.has(lines[first]!))) first++;
  return lines.slice(first).join("\n");
}

/**
 * `ax config edit`: the version in force, as the API and the console show it (secrets masked,
 * comments dropped), opened in `$VISUAL` / `$EDITOR` (else `vi`), then applied as an edit of that
 * version, which keeps the stored file's comments and the masked values left as shown. Answers
 * undefined when the text came back unchanged. The text stays in its file when nothing is stored.
 */
export async function editConfig(api: ConfigApi, author: string): Promise<ConfigApplied | undefined> {
  const current = await api.current({ redacted: true });
  if (!current) {
    throw new AxConfigEditError(
      "no config version is stored yet, so there is nothing to edit: store a first one with `ax config apply <file>`",
    );
  }
  const dir = mkdtempSync(join(tmpdir(), "ax-config-edit-"));
  const file = join(dir, `runtime-v${current.version}.yaml`);
  const opening = header(current.version);
  writeFileSync(file, opening + current.yaml, { mode: 0o600 });
  const editor = process.env.VISUAL || process.env.EDITOR || "vi";
  // Through a shell, as git and kubectl do, so that an editor given with its flags (`code --wait`) works.
  const opened = spawnSync(`${editor} '${file.replaceAll("'", "'\\''")}'`, { shell: true, stdio: "inherit" });
  if (opened.error || opened.status !== 0) {
    const how = opened.error
      ? `could not start (${opened.error.message})`
      : opened.status !== null
        ? `exited with code ${opened.status}`
        : `was stopped by ${opened.signal}`;
    throw new AxConfigEditError(
      `the editor (${editor}) ${how}: nothing was stored; the text is in ${file}. Set VISUAL or EDITOR to an editor that exits 0 when saved`,
    );
  }
  const text = withoutHeader(readFileSync(file, "utf8"), opening);
  if (text === current.yaml) {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
  try {
    const applied = await api.apply(text, EDITED_FILE, author, { base: current.version });
    rmSync(dir, { recursive: true, force: true });
    return applied;
  } catch (error) {
    // Without the header: a refusal's line and column count from the text as sent, and now match the file's.
    writeFileSync(file, text, { mode: 0o600 });
    console.error(`ax config edit: nothing was stored; your text is kept in ${file}`);
    throw error;
  }
}
