import { useState } from "react";
import { REDACTED } from "@ax/common/redact";
import { api, ApiError } from "../api";
import { useAction, useApi } from "../hooks";
import { useI18n } from "../i18n";
import { useSession } from "../session";
import { ConfigDiff } from "./ConfigDiff";
import { ErrorNote, Modal } from "./Status";

interface Checked {
  inForce: number | null;
  unchanged: boolean;
  diff: string;
  warnings: string[];
}

export interface Stored {
  version: number;
  unchanged: boolean;
  warnings: string[];
}

/**
 * A new config version written in the console: checked first (`POST /api/config/check`: the diff
 * from the version in force and the warnings, or the refusal with its line), then applied
 * (`POST /api/config`). It starts from the version in force as the API shows it (secrets masked,
 * comments dropped) and names that version as the edit's `base`: the server makes the changes on
 * the stored text, which keeps its comments and the masked values left as shown, and refuses the
 * edit (409) if another version was stored since the editor opened.
 */
export function ConfigEditor({ onClose, onStored }: { onClose: () => void; onStored: (stored: Stored) => void }) {
  const { t } = useI18n();
  // Read when the editor opens, and again when asked after another version was stored meanwhile.
  const current = useApi<{ config: { yaml: string; version: number } | null }>("/api/config");
  if (current.error) {
    return (
      <Modal title={t("config.edit.title")} onClose={onClose}>
        <div className="modal-body">
          <ErrorNote error={current.error} />
        </div>
      </Modal>
    );
  }
  if (!current.data) return null;
  const config = current.data.config;
  // Keyed by version: reopened on a newer one, the form starts again from its text.
  return (
    <EditorForm
      key={config?.version ?? 0}
      text={config?.yaml ?? ""}
      base={config?.version}
      onClose={onClose}
      onStored={onStored}
      onReload={current.reload}
    />
  );
}

interface EditorProps {
  text: string;
  /** The version `text` shows; none while no version is stored. */
  base: number | undefined;
  onClose: () => void;
  onStored: (stored: Stored) => void;
  /** Reads the version in force again (after a 409: another version was stored since `base`). */
  onReload: () => void;
}

function EditorForm({ text, base, onClose, onStored, onReload }: EditorProps) {
  const { t } = useI18n();
  const session = useSession();
  const [yaml, setYaml] = useState(text);
  const [checked, setChecked] = useState<{ yaml: string; result: Checked }>();
  const { busy, error, run } = useAction();
  const [stale, setStale] = useState(false);
  /** A 409 says `base` is no longer the version in force: the form offers to start again from the newer one. */
  const post = async <T,>(path: string, body: object): Promise<T> => {
    try {
      return await api.post<T>(path, { ...body, yaml, file: "console", base });
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) setStale(true);
      throw e;
    }
  };
  const check = () => run(async () => setChecked({ yaml, result: await post<Checked>("/api/config/check", {}) }));
  // The author the history shows: the signed-in token's name, or the console without auth.
  const apply = () => run(async () => onStored(await post<Stored>("/api/config", { author: session?.name ?? "console" })));
  // A check says something about the text it read only: an edit since asks for another.
  const result = checked?.yaml === yaml ? checked.result : undefined;
  // A diff with no hunk (both sides shown as the API shows them) is no change worth a new version.
  const noChange = result !== undefined && (result.unchanged || !/^@@/m.test(result.diff));
  return (
    <Modal title={t("config.edit.title")} onClose={onClose}>
      <div className="modal-body config-editor">
        <label className="field">
          <span>{t("config.edit.text")}</span>
          <textarea
            className="code"
            spellCheck={false}
            rows={16}
            value={yaml}
            name="yaml"
            onChange={(e) => setYaml(e.target.value)}
            aria-invalid={error !== undefined}
          />
        </label>
        {yaml.includes(REDACTED) && <div className="note small">{t("config.edit.masked")}</div>}
        {result && (
          <div className="checked" role="status">
            <p className="small">{noChange ? t("config.edit.unchanged") : t("config.edit.valid")}</p>
            {!noChange && <ConfigDiff diff={result.diff} />}
            {result.warnings.map((w) => (
              <p key={w} className="warn-line small">
                {w}
              </p>
            ))}
          </div>
        )}
        {error && (
          <div className="error-note" role="alert">
            {error}
          </div>
        )}
        {stale && (
          <div className="note small">
            {t("config.edit.stale")}{" "}
            <button type="button" className="link" onClick={onReload}>
              {t("config.edit.reload")}
            </button>
          </div>
        )}
      </div>
      <footer>
        <button type="button" onClick={onClose}>
          {t("cancel")}
        </button>
        <button type="button" disabled={busy} onClick={check}>
          {t("config.edit.check")}
        </button>
        <button type="button" className="primary" disabled={busy || !result || noChange} onClick={apply}>
          {t("config.edit.apply")}
        </button>
      </footer>
    </Modal>
  );
}
