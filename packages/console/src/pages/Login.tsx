import { useState } from "react";
import { token } from "../api";
import { useI18n } from "../i18n";

export function LoginPage({ onLogin }: { onLogin: () => void }) {
  const { t, toggle } = useI18n();
  const [value, setValue] = useState("");
  return (
    <div className="login">
      <form
        className="panel"
        onSubmit={(e) => {
          e.preventDefault();
          token.set(value.trim());
          onLogin();
        }}
      >
        <div className="brand big">
          <span className="logo">ax</span>
        </div>
        <h2>{t("login.title")}</h2>
        <p className="muted">{t("login.hint")}</p>
        <label className="field">
          <span>{t("login.token")}</span>
          <input type="password" name="token" value={value} onChange={(e) => setValue(e.target.value)} />
        </label>
        <button type="submit" className="primary" disabled={!value.trim()}>
          {t("login.submit")}
        </button>
        <button type="button" className="link" onClick={toggle}>
          {t("language")}
        </button>
      </form>
    </div>
  );
}
