import { type ReactNode, useState } from "react";
import { api } from "../api";
import { ConfigDiff } from "../components/ConfigDiff";
import { ConfigEditor, type Stored } from "../components/ConfigEditor";
import { Confirm } from "../components/Confirm";
import { Empty, ErrorNote } from "../components/Status";
import { Time } from "../components/Time";
import { yamlValue } from "@ax/common/yaml-value";
import { fieldPieces } from "../format";
import { useAction, useApi } from "../hooks";
import { fill, useI18n } from "../i18n";
import { ActionButton, useSession } from "../session";
import type { ConfigHistoryEntry, ConfigVersionInfo, EffectiveOption } from "../types";

interface Effective {
  version: number | null;
  cluster: EffectiveOption[];
  tasks: Record<string, EffectiveOption[]>;
  flows: Record<string, EffectiveOption[]>;
}

/** Pieces no longer than this stay on one line: `slots: 1 }` never leaves its brace on a line of its own. */
const WHOLE_PIECE = 24;

/**
 * A value that wraps between its fields (after a comma), not inside one, so a narrow column
 * breaks `{ name: core_db, slots: 1 }` after `core_db,`. A field too long for a line still wraps.
 */
function Breakable({ text }: { text: string }) {
  return fieldPieces(text).map((piece, i) => (
    // biome-ignore lint/suspicious/noArrayIndexKey: the pieces of one string, in order
    <span key={i} className={piece.length <= WHOLE_PIECE ? "whole" : undefined}>
      {i > 0 && <wbr />}
      {piece}
    </span>
  ));
}

function Options({ title, options, all }: { title: ReactNode; options: EffectiveOption[]; all: boolean }) {
  const { t } = useI18n();
  const shown = all ? options : options.filter((o) => o.source !== "default");
  if (shown.length === 0) return null;
  return (
    <section className="panel">
      <h3>{title}</h3>
      <div className="table-wrap">
        <table className="table compact options">
          <thead>
            <tr>
              <th>{t("config.option")}</th>
              <th>{t("config.value")}</th>
              <th>{t("config.source")}</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((o) => (
              <tr key={o.option}>
                <td className="mono">{o.option}</td>
                {/* The tooltip has the API's value (milliseconds, `perMs`), as `curl` or `ax config show --json` read it. */}
                <td className="mono value" title={o.value === null ? undefined : JSON.stringify(o.value)}>
                  {o.value === null ? (
                    <span className="muted unset">{t("config.unset")}</span>
                  ) : (
                    <Breakable text={yamlValue(o.option, o.value)} />
                  )}
                </td>
                <td>
                  <span className={`pill src-${o.source.split(" ")[0]}`}>{o.source}</span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

/**
 * An older version's text stored again as the newest (`POST /api/config/rollback`), after a
 * confirmation: every process applies it within seconds. The page says what was stored.
 */
function Rollback({ version, newest, onDone }: { version: ConfigVersionInfo; newest: number; onDone: (stored: Stored) => void }) {
  const { t } = useI18n();
  const session = useSession();
  const action = useAction();
  const [asking, setAsking] = useState(false);
  const roll = () =>
    action.run(async () => {
      setAsking(false);
      // The author the history shows: the signed-in token's name, or the console without auth.
      const author = session?.name ?? "console";
      onDone(await api.post<Stored>("/api/config/rollback", { version: version.version, author }));
    });
  return (
    <div className="rollback">
      {version.version !== newest && (
        <ActionButton
          needs="admin"
          className="small"
          title={t("config.rollbackHint")}
          disabled={action.busy}
          onClick={() => setAsking(true)}
        >
          {fill(t("config.rollback"), { version: version.version })}
        </ActionButton>
      )}
      {action.error && (
        <div className="error-note" role="alert">
          {action.error}
        </div>
      )}
      {asking && (
        <Confirm
          title={fill(t("config.rollbackTitle"), { version: version.version })}
          text={fill(t("config.rollbackText"), { version: version.version, next: newest + 1, file: version.file })}
          keep={fill(t("config.rollbackKeep"), { current: newest })}
          act={fill(t("config.rollback"), { version: version.version })}
          onKeep={() => setAsking(false)}
          onAct={roll}
        />
      )}
    </div>
  );
}

export function ConfigPage() {
  const { t } = useI18n();
  // A version applied elsewhere (`ax config apply`, another operator) shows up without a reload.
  const effective = useApi<Effective>("/api/config/effective", 10_000);
  const history = useApi<{ versions: ConfigHistoryEntry[] }>("/api/config/versions", 10_000);
  const [picked, setPicked] = useState<number>();
  // Defaults are most of the options: without them the page shows what someone chose.
  const [all, setAll] = useState(false);
  // The diff says what a version changed; the file is the whole of it (alert groups, pools), as `ax config show` prints the values.
  const [whole, setWhole] = useState(false);
  const shown = picked ?? history.data?.versions[0]?.version;
  const version = useApi<ConfigVersionInfo>(shown === undefined ? undefined : `/api/config/versions/${shown}`);
  const [editing, setEditing] = useState(false);
  const [stored, setStored] = useState<Stored>();
  /** A version stored here (written or rolled back to): said under the heading, and shown as the newest. */
  const onStored = (result: Stored) => {
    setEditing(false);
    setStored(result);
    setPicked(undefined);
    history.reload();
    effective.reload();
  };
  return (
    <>
      <div className="page-head">
        <h1>{t("config")}</h1>
        <div className="actions">
          <ActionButton needs="admin" title={t("config.edit.hint")} onClick={() => setEditing(true)}>
            {t("config.edit")}
          </ActionButton>
        </div>
      </div>
      {stored && (
        <p className="note small" role="status">
          {fill(t(stored.unchanged ? "config.rollbackSame" : "config.rolledBack"), { version: stored.version })}
          {stored.warnings.map((w) => (
            <span key={w} className="warn-line">
              {w}
            </span>
          ))}
        </p>
      )}
      {editing && <ConfigEditor onClose={() => setEditing(false)} onStored={onStored} />}
      <ErrorNote error={effective.error} />
      {effective.data?.version === null && <Empty>{t("config.none")}</Empty>}
      <div className="grid-2 top">
        <div>
          <h2>
            {t("config.effective")} {effective.data?.version != null && <span className="muted">v{effective.data.version}</span>}
            <label className="toggle">
              <input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} /> {t("config.showDefaults")}
            </label>
          </h2>
          {effective.data && <Options title={t("config.cluster")} options={effective.data.cluster} all={all} />}
          {Object.entries(effective.data?.tasks ?? {}).map(([name, options]) => (
            <Options
              key={`t-${name}`}
              title={
                <>
                  {t("task")} <span className="as-typed">{name}</span>
                </>
              }
              options={options}
              all={all}
            />
          ))}
          {Object.entries(effective.data?.flows ?? {}).map(([name, options]) => (
            <Options
              key={`f-${name}`}
              title={
                <>
                  {t("flow")} <span className="as-typed">{name}</span>
                </>
              }
              options={options}
              all={all}
            />
          ))}
        </div>
        <div>
          <h2>{t("config.history")}</h2>
          <ul className="versions">
            {(history.data?.versions ?? []).map((v) => (
              <li key={v.version}>
                <button type="button" className={v.version === shown ? "active" : ""} onClick={() => setPicked(v.version)}>
                  <strong>v{v.version}</strong> <span className="muted">{v.author}</span>
                  <span className="diffstat">
                    <span className="add">+{v.added}</span> <span className="del">−{v.removed}</span>
                  </span>
                  <span className="muted small">
                    <Time iso={v.createdAt} zone />
                  </span>
                </button>
              </li>
            ))}
          </ul>
          {version.data && history.data?.versions[0] && (
            <Rollback version={version.data} newest={history.data.versions[0].version} onDone={onStored} />
          )}
          {version.data && (
            <div className="segmented" title={t("config.view")}>
              <button type="button" className="segment" aria-pressed={!whole} onClick={() => setWhole(false)}>
                {t("config.diff")}
              </button>
              <button type="button" className="segment" aria-pressed={whole} onClick={() => setWhole(true)} title={version.data.file}>
                {t("config.file")} <span className="muted">{version.data.file.split(/[\\/]/).at(-1)}</span>
              </button>
            </div>
          )}
          {version.data &&
            (whole ? (
              <pre className="code" data-config-file>
                {version.data.yaml}
              </pre>
            ) : (
              <ConfigDiff diff={version.data.diff} />
            ))}
        </div>
      </div>
    </>
  );
}
