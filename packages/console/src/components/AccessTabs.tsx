import { useI18n } from "../i18n";
import { Link } from "../router";

/** Tokens and the audit log share one entry of the navigation: a phone's bar has room for seven. */
export function AccessTabs({ current }: { current: "tokens" | "audit" }) {
  const { t } = useI18n();
  return (
    <nav className="segmented access-tabs" aria-label={t("access")}>
      {(["tokens", "audit"] as const).map((page) => (
        <Link key={page} to={`/${page}`} className="segment" current={page === current}>
          {t(page)}
        </Link>
      ))}
    </nav>
  );
}
