import { type ButtonHTMLAttributes, createContext, type ReactNode, useContext } from "react";
import { useApi } from "./hooks";
import { fill, useI18n } from "./i18n";

/** A token's scope; each one allows what the ones before it do. */
export type Scope = "read" | "trigger" | "admin";
const SCOPES: Scope[] = ["read", "trigger", "admin"];

export interface Session {
  auth: boolean;
  name: string | null;
  scope: Scope;
  expiresAt: string | null;
}

const Context = createContext<Session | undefined>(undefined);

/**
 * The signed-in token's name and scope, read once per sign-in and again every minute (an admin may
 * revoke or replace it). Until it is known every action stays enabled: the server decides anyway.
 */
export function SessionProvider({ children }: { children: ReactNode }) {
  const { data } = useApi<Session>("/api/session", 60_000);
  return <Context.Provider value={data}>{children}</Context.Provider>;
}

export function useSession(): Session | undefined {
  return useContext(Context);
}

/**
 * A button for a change the token's scope may not allow: disabled, with a title saying which scope
 * it needs, instead of enabled and answered with a 403 after the click.
 */
export function ActionButton({ needs, disabled, title, ...rest }: ButtonHTMLAttributes<HTMLButtonElement> & { needs: Scope }) {
  const { t } = useI18n();
  const session = useSession();
  const refused = session !== undefined && SCOPES.indexOf(session.scope) < SCOPES.indexOf(needs);
  return (
    <button
      type="button"
      {...rest}
      data-needs={needs}
      disabled={disabled || refused}
      title={refused ? fill(t("scope.refused"), { needs, scope: session.scope }) : title}
    />
  );
}
