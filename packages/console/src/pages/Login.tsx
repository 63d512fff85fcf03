import { useEffect, useRef, useState } from "react";
import { ApiError, signIn } from "../api";
import { errorText } from "../error-text";
import { useI18n } from "../i18n";

export function LoginPage({ onLogin }: { onLogin: () => void }) {
  const { t, toggle } = useI18n();
  const [value, setValue] = useState("");
  const [busy, setBusy] = useState(false);
  // The screen asks for one thing: the token field has the focus on arrival.
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => field.current?.focus(), []);
  // The status, not its words: the lead follows a language switch made after the answer.
  const [refusal, setRefusal] = useState<{ status: number; detail: string }>();
  const submit = async () => {
    setBusy(true);
    setRefusal(undefined);
    try {
      await signIn(value.trim());
      onLogin();
    } catch (e) {
      setRefusal({ status: e instanceof ApiError ? e.status : 0, detail: errorText(e, t) });
      setBusy(false);
    }
  };
  return (
    <div className="login">
      <form
        className="panel"
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <div className="brand big">
          <span className="logo">ax</span>
        </div>
        <h2>{t("login.title")}</h2>
        <p className="muted">{t("login.hint")}</p>
        <label className="field">
          <span>{t("login.token")}</span>
          <input
            ref={field}
            type="password"
            name="token"
            autoComplete="off"
            value={value}
            aria-invalid={refusal !== undefined}
            onChange={(e) => setValue(e.target.value)}
          />
        </label>
        {refusal && (
          <div className="error-note inline" role="alert">
            <strong>{t(refusal.status === 401 ? "login.invalid" : refusal.status === 429 ? "login.limited" : "login.failed")}</strong>:{" "}
            {refusal.detail}
          </div>
        )}
        <button type="submit" className="primary" disabled={!value.trim() || busy}>
          {busy ? t("login.checking") : t("login.submit")}
        </button>
        <button type="button" className="link" onClick={toggle}>
          {t("language")}
        </button>
      </form>
    </div>
  );
}
