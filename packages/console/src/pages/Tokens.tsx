import { useRef, useState } from "react";
import { api } from "../api";
import { Confirm } from "../components/Confirm";
import { AccessTabs } from "../components/AccessTabs";
import { Empty, ErrorNote } from "../components/Status";
import { Time, Zone } from "../components/Time";
import { useAction, useApi } from "../hooks";
import { fill, useI18n } from "../i18n";
import { ActionButton, useSession } from "../session";
import type { TokenInfo } from "../types";

const SCOPES = ["read", "trigger", "admin"] as const;
/** How long a new token works: the choices a person makes, in days (0: until revoked). */
const LIFETIMES = [0, 1, 30, 90, 365] as const;

/**
 * A token just made: the only time its secret is shown, with a button to copy it. A browser gives
 * pages the clipboard only over https or on localhost: a console reached at http://10.0.0.5 gets
 * none, so the secret is selected for the person to copy with the keyboard.
 */
function Created({ token, onDone }: { token: TokenInfo & { token: string }; onDone: () => void }) {
  const { t } = useI18n();
  const [copied, setCopied] = useState<"yes" | "selected">();
  const secret = useRef<HTMLElement>(null);
  const selectSecret = () => {
    if (secret.current) window.getSelection()?.selectAllChildren(secret.current);
    setCopied("selected");
  };
  const copy = () => {
    if (!navigator.clipboard) return selectSecret();
    navigator.clipboard.writeText(token.token).then(() => setCopied("yes"), selectSecret);
  };
  return (
    <div className="note token-created" role="status">
      <strong>{fill(t("tokens.created"), { name: token.name, scope: token.scope })}</strong>
      <code className="token-secret" data-testid="new-token" ref={secret}>
        {token.token}
      </code>
      <div className="row">
        <button type="button" onClick={copy}>
          {copied === "yes" ? t("tokens.copied") : t("tokens.copy")}
        </button>
        {copied === "selected" && <span className="muted small">{t("tokens.copyByHand")}</span>}
        <button type="button" className="link" onClick={onDone}>
          {t("tokens.hide")}
        </button>
      </div>
    </div>
  );
}

/** API tokens for admins: who may read, trigger or administer; create one (shown once) or revoke one. */
export function TokensPage() {
  const { t } = useI18n();
  const session = useSession();
  const refused = session?.auth === true && session.scope !== "admin";
  const tokens = useApi<{ tokens: TokenInfo[] }>(refused ? undefined : "/api/tokens", 10_000);
  const action = useAction();
  const [name, setName] = useState("");
  const [scope, setScope] = useState<(typeof SCOPES)[number]>("read");
  const [days, setDays] = useState<(typeof LIFETIMES)[number]>(0);
  const [created, setCreated] = useState<TokenInfo & { token: string }>();
  const [revoking, setRevoking] = useState<string>();
  const create = () =>
    action.run(async () => {
      const expiresAt = days === 0 ? undefined : new Date(Date.now() + days * 86_400_000).toISOString();
      setCreated(await api.post<TokenInfo & { token: string }>("/api/tokens", { name, scope, ...(expiresAt ? { expiresAt } : {}) }));
      setName("");
      tokens.reload();
    });
  const revoke = (token: string) =>
    action.run(async () => {
      await api.delete(`/api/tokens/${encodeURIComponent(token)}`);
      tokens.reload();
    });
  if (refused) {
    return (
      <>
        <h1>{t("tokens")}</h1>
        <AccessTabs current="tokens" />
        <Empty>{fill(t("tokens.needsAdmin"), { scope: session.scope })}</Empty>
      </>
    );
  }
  const list = tokens.data?.tokens ?? [];
  return (
    <>
      <h1>{t("tokens")}</h1>
      <AccessTabs current="tokens" />
      <p className="muted small">{t("tokens.explain")}</p>
      <ErrorNote error={tokens.error} />
      <div className="filters token-form">
        <label>
          {t("tokens.name")}
          <input name="tokenName" value={name} onChange={(e) => setName(e.target.value)} placeholder="ops_dashboard" />
        </label>
        <label>
          {t("tokens.scope")}
          <select name="tokenScope" value={scope} onChange={(e) => setScope(e.target.value as (typeof SCOPES)[number])}>
            {SCOPES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          {t("tokens.expires")}
          <select name="tokenExpires" value={days} onChange={(e) => setDays(Number(e.target.value) as (typeof LIFETIMES)[number])}>
            {LIFETIMES.map((d) => (
              <option key={d} value={d}>
                {d === 0 ? t("tokens.never") : fill(t("tokens.days"), { n: d })}
              </option>
            ))}
          </select>
        </label>
        <ActionButton needs="admin" className="primary" disabled={!name || action.busy} onClick={create}>
          {t("tokens.create")}
        </ActionButton>
      </div>
      {action.error && (
        <div className="error-note inline" role="alert">
          {action.error}
        </div>
      )}
      {created && <Created token={created} onDone={() => setCreated(undefined)} />}
      {tokens.data && list.length === 0 ? (
        <Empty>{t("tokens.empty")}</Empty>
      ) : (
        <div className="table-wrap">
          <table className="table tokens">
            <thead>
              <tr>
                <th>{t("tokens.name")}</th>
                <th>{t("tokens.scope")}</th>
                <th>
                  {t("tokens.createdAt")} <Zone />
                </th>
                <th>{t("tokens.lastUsed")}</th>
                <th>{t("tokens.expires")}</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.map((k) => (
                <tr key={k.name} data-token={k.name}>
                  <td className="mono">{k.name}</td>
                  <td>
                    <span className={`pill scope-${k.scope}`}>{k.scope}</span>
                  </td>
                  <td className="muted nowrap">
                    <Time iso={k.createdAt} />
                  </td>
                  <td className="muted nowrap">{k.lastUsedAt ? <Time iso={k.lastUsedAt} /> : t("tokens.neverUsed")}</td>
                  <td className="muted nowrap">{k.expiresAt ? <Time iso={k.expiresAt} /> : t("tokens.never")}</td>
                  <td>
                    <ActionButton needs="admin" className="small danger" disabled={action.busy} onClick={() => setRevoking(k.name)}>
                      {t("tokens.revoke")}
                    </ActionButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {revoking && (
        <Confirm
          title={fill(t("tokens.revokeTitle"), { name: revoking })}
          text={t(revoking === session?.name ? "tokens.revokeOwn" : "tokens.revokeConfirm")}
          keep={t("tokens.keep")}
          act={t("tokens.revoke")}
          onKeep={() => setRevoking(undefined)}
          onAct={() => {
            const token = revoking;
            setRevoking(undefined);
            void revoke(token);
          }}
        />
      )}
    </>
  );
}
